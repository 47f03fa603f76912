"""The two statements that decide whether a replica may answer a question's reads: how far the
primary has written its log, and how far a replica has replayed it."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


def _position(lsn: str) -> int:
    """A log sequence number ('16/B374D848') as one integer, for comparing."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) | int(low, 16)


async def written_position(session: AsyncSession) -> int:
    """Where the primary's write-ahead log is written to: every transaction committed before
    this call ends at or before it."""
    lsn = await session.scalar(text("SELECT pg_current_wal_lsn()::text"))
    return _position(str(lsn))


async def replayed_position(session: AsyncSession) -> int | None:
    """Where a streaming standby has replayed the primary's log to; None on a server that is
    not one (a primary, a logical replica), whose positions say nothing about the primary's."""
    lsn = await session.scalar(text("SELECT pg_last_wal_replay_lsn()::text"))
    return None if lsn is None else _position(str(lsn))
