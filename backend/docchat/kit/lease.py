"""A worker's lease on one row of work (an ingestion job, a source's sync): kept alive by
heartbeats, and checked by every write.

A worker claims a row by writing its own token into it (how the row is chosen is the
claimer's business: `documents.jobs_repository.claim_next`, `sources.repository.claim_due`).
While it works it beats: a row whose heartbeats stop (its worker died) is claimed again by another.
Every write goes through the fence (`Lease.fenced`, or `Lease.held` in a transaction of the
caller's): the row is locked while the token still holds it, so a worker whose claim was
taken (or withdrawn) cannot write over its successor: it gets `LostClaim` and stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.db import utcnow

logger = logging.getLogger(__name__)
Held = TypeVar("Held")


class LostClaim(Exception):
    """Another worker holds the row now, or the claim was withdrawn: stop without writing
    anything more."""


def worker_name() -> str:
    """A worker's name in the rows it claims: its host and process, made unique."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Lease(Generic[Held]):
    """One claim, as its worker uses it."""

    sessionmaker: async_sessionmaker[AsyncSession]
    # Locks the claimed row for the rest of the transaction and returns it (or anything
    # true) while the token still holds it; None or False when it does not.
    hold: Callable[[AsyncSession], Awaitable[Held | None]]
    # Records that the holder is alive (at the given time); False when the claim is gone.
    beat: Callable[[AsyncSession, datetime], Awaitable[bool]]
    heartbeat_seconds: float
    name: str  # the row, for the log: "job <id>"
    lost_message: str  # what `LostClaim` says

    async def held(self, session: AsyncSession) -> Held:
        """The row, locked in `session`'s transaction, if the claim still holds it."""
        row = await self.hold(session)
        if not row:
            raise LostClaim(self.lost_message)
        return row

    @contextlib.asynccontextmanager
    async def fenced(self) -> AsyncIterator[AsyncSession]:
        """A transaction that holds the row: it commits only while the claim is ours."""
        async with self.sessionmaker() as session:
            await self.held(session)
            yield session
            await session.commit()

    async def heartbeats(self, lost: asyncio.Event) -> None:
        """Beat until cancelled; `lost` is set (and the beating ends) once the claim is gone."""
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                async with self.sessionmaker() as session:
                    alive = await self.beat(session, utcnow())
                    await session.commit()
            except Exception as exc:  # the database blinked: try again at the next beat
                logger.warning("heartbeat for %s failed: %s", self.name, exc)
                continue
            if not alive:
                lost.set()
                return

    @contextlib.asynccontextmanager
    async def kept_alive(self) -> AsyncIterator[asyncio.Event]:
        """Heartbeats for the length of the block; the event is set should the claim go."""
        lost = asyncio.Event()
        beating = asyncio.create_task(self.heartbeats(lost))
        try:
            yield lost
        finally:
            await stopped(beating)


async def stopped(task: asyncio.Task[None]) -> None:
    """Cancel a heartbeat task and wait for it to end (a cancellation of the caller still
    reaches the caller: `wait` does not raise the task's own)."""
    task.cancel()
    await asyncio.wait({task})
