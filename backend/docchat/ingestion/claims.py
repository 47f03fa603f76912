"""The worker's side of the job queue: claiming jobs (one, or a group of small files), the
lease on each (`kit.lease`), and the document state a claim and its end set."""

from __future__ import annotations

import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import WorkerSettings
from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import DocumentStatus
from docchat.kit.lease import Lease


@dataclass(frozen=True)
class ClaimedJob:
    id: uuid.UUID
    document_id: uuid.UUID
    attempts: int
    token: uuid.UUID
    version_id: uuid.UUID | None = None  # a new version of the document, not the document


class JobClaims:
    """Claims jobs for one worker (`worker_id`) and leases them."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        settings: WorkerSettings,
        worker_id: str,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.settings = settings
        self.worker_id = worker_id

    async def claim(self, *, idle_owners_only: bool = False) -> ClaimedJob | None:
        async with self.sessionmaker() as session:
            claimed = await self._claim_in(session, idle_owners_only=idle_owners_only)
            if claimed is not None:
                await set_waiting(session, claimed, False)
            await session.commit()
            return claimed

    async def _claim_in(
        self, session: AsyncSession, *, idle_owners_only: bool = False
    ) -> ClaimedJob | None:
        job = await jobs_repository.claim_next(
            session,
            worker_id=self.worker_id,
            now=utcnow(),
            stale_after=timedelta(seconds=self.settings.stale_after_seconds),
            idle_owners_only=idle_owners_only,
        )
        if job is None:
            return None
        assert job.claim_token is not None
        return ClaimedJob(job.id, job.document_id, job.attempts, job.claim_token, job.version_id)

    async def claim_group(self) -> list[ClaimedJob]:
        """The next job and, when it is a small file never read before, the jobs that follow
        it in the queue's rotation while they are too, up to `WORKER_GROUP_SIZE`: each is
        claimed as a claim of its own would take it, so the owners still take turns within a
        group. One transaction for all of them."""
        size = self.settings.group_size
        async with self.sessionmaker() as session:
            first = await self._claim_in(session)
            group = [] if first is None else [first]
            if first is not None and size > 1 and await self._groupable(session, first):
                while len(group) < size:
                    savepoint = await session.begin_nested()
                    claimed = await self._claim_in(session)
                    if claimed is None or not await self._groupable(session, claimed):
                        await savepoint.rollback()  # left in the queue for the next claim
                        break
                    await savepoint.commit()
                    group.append(claimed)
            for job in group:
                await set_waiting(session, job, False)
            await session.commit()
            return group

    async def _groupable(self, session: AsyncSession, job: ClaimedJob) -> bool:
        """A first reading of a small file: it costs far less in the model than in the
        fixed steps around it, which a group shares."""
        if job.version_id is not None:
            return False
        document = await documents_repository.get_live(session, job.document_id)
        return (
            document is not None
            and document.chunk_count is None
            and document.size_bytes <= self.settings.group_max_bytes
            and job.attempts <= self.settings.max_attempts
        )

    def lease(self, job: ClaimedJob) -> Lease[bool]:
        return Lease(
            self.sessionmaker,
            hold=partial(jobs_repository.hold_claim, job_id=job.id, token=job.token),
            beat=partial(_beat, job),
            heartbeat_seconds=self.settings.heartbeat_seconds,
            name=f"job {job.id}",
            lost_message=f"job {job.id} was taken over by another worker",
        )

    def fenced(self, job: ClaimedJob) -> AbstractAsyncContextManager[AsyncSession]:
        """A transaction that holds the job's row: it commits only while the claim is ours."""
        return self.lease(job).fenced()


async def _beat(job: ClaimedJob, session: AsyncSession, now: datetime) -> bool:
    return await jobs_repository.heartbeat(session, job.id, job.token, now)


async def set_waiting(session: AsyncSession, job: ClaimedJob, waiting: bool) -> None:
    """The document (or its new version) queued again, or in work."""
    if job.version_id is None:
        await documents_repository.set_waiting(session, job.document_id, waiting)
        return
    status = DocumentStatus.queued if waiting else DocumentStatus.processing
    await documents_repository.set_version_state(session, job.version_id, status)


async def mark_failed(session: AsyncSession, job: ClaimedJob, message: str) -> None:
    """The document failed; or, for a new version, only the version (the document's
    current content keeps answering)."""
    if job.version_id is None:
        await documents_repository.mark_failed(session, job.document_id, message)
        return
    await documents_repository.set_version_state(
        session, job.version_id, DocumentStatus.failed, error=message
    )
