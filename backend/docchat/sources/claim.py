"""A source claimed for a sync (or its removal): the claim, its lease (`kit.lease`) and the
progress it reports."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import WorkerSettings
from docchat.db import utcnow
from docchat.kit.lease import Lease
from docchat.sources import repository
from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceState
from docchat.sources.plan import Progress


@dataclass(frozen=True)
class Claim:
    source_id: uuid.UUID
    token: uuid.UUID
    collection_id: uuid.UUID
    owner_id: uuid.UUID
    kind: str
    removing: bool
    interval_minutes: int | None
    failures: int


class SourceClaims:
    """Claims sources for a worker, and holds them."""

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], settings: WorkerSettings
    ) -> None:
        self.sessionmaker = sessionmaker
        self.settings = settings

    async def claim(self) -> Claim | None:
        """A due source (or one whose worker died), claimed; None when none is due."""
        now = utcnow()
        stale = now - timedelta(seconds=self.settings.stale_after_seconds)
        token = uuid.uuid4()
        async with self.sessionmaker() as session:
            row = await repository.claim_due(session, token, now, stale)
            await session.commit()
        if row is None:
            return None
        return Claim(
            row.id,
            token,
            row.collection_id,
            row.owner_id,
            row.kind,
            row.state == SourceState.removing,
            row.interval_minutes,
            row.failures,
        )

    def lease(self, claim: Claim) -> Lease[SourceRow]:
        return Lease(
            self.sessionmaker,
            hold=partial(repository.hold, source_id=claim.source_id, token=claim.token),
            beat=partial(_beat, claim),
            heartbeat_seconds=self.settings.heartbeat_seconds,
            name=f"source {claim.source_id}",
            lost_message=f"source {claim.source_id} was paused, deleted or taken over",
        )

    async def hold(self, session: AsyncSession, claim: Claim) -> SourceRow:
        """The source's row, locked, if this claim still holds it; else `LostClaim`."""
        return await self.lease(claim).held(session)

    async def report(
        self, claim: Claim, progress: Progress, session: AsyncSession | None = None
    ) -> None:
        """Write the progress (in `session`'s transaction when given)."""
        if session is not None:
            await repository.set_progress(session, claim.source_id, claim.token, progress.as_json())
            return
        async with self.sessionmaker() as session:
            await repository.set_progress(session, claim.source_id, claim.token, progress.as_json())
            await session.commit()


async def _beat(claim: Claim, session: AsyncSession, now: datetime) -> bool:
    return await repository.beat(session, claim.source_id, claim.token, now)
