"""The processing queue of documents (`ingestion_jobs`), all its SQL: the claim that lets
workers run in parallel, and the fence.

A claim gives the worker a fresh `claim_token`. Every write a worker makes for a job first
locks the job row and checks that the token is still its own (`hold_claim`), in the same
transaction as the write: a worker whose job was taken over (it stalled and was presumed
dead) can no longer write progress, results or the job's end.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import IngestionJob, JobStatus


async def enqueue(session: AsyncSession, document_id: uuid.UUID) -> IngestionJob:
    job = IngestionJob(document_id=document_id)
    session.add(job)
    await session.flush()
    return job


async def cancel_pending(session: AsyncSession, document_id: uuid.UUID, now: datetime) -> None:
    """Retire queued jobs of a document (a newer job or a deletion supersedes them)."""
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.document_id == document_id, IngestionJob.status == JobStatus.queued)
        .values(status=JobStatus.done, finished_at=now, last_error="superseded")
    )


async def claim_next(
    session: AsyncSession, *, worker_id: str, now: datetime, stale_after: timedelta
) -> IngestionJob | None:
    """Take the oldest runnable job: queued and due, or running without a recent heartbeat."""
    last_sign_of_life = func.coalesce(IngestionJob.heartbeat_at, IngestionJob.claimed_at)
    statement = (
        select(IngestionJob)
        .where(
            or_(
                (IngestionJob.status == JobStatus.queued) & (IngestionJob.available_at <= now),
                (IngestionJob.status == JobStatus.running)
                & (last_sign_of_life < now - stale_after),
            )
        )
        .order_by(IngestionJob.available_at, IngestionJob.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    job = (await session.execute(statement)).scalar_one_or_none()
    if job is None:
        return None
    job.status = JobStatus.running
    job.attempts += 1
    job.claimed_at = now
    job.heartbeat_at = now
    job.claimed_by = worker_id
    job.claim_token = uuid.uuid4()
    await session.flush()
    return job


async def hold_claim(session: AsyncSession, job_id: uuid.UUID, token: uuid.UUID) -> bool:
    """Lock the job row if `token` still holds it; the lock lasts until the transaction ends,
    so the writes made beside it cannot race a takeover."""
    statement = (
        select(IngestionJob.id)
        .where(
            IngestionJob.id == job_id,
            IngestionJob.claim_token == token,
            IngestionJob.status == JobStatus.running,
        )
        .with_for_update()
    )
    return (await session.execute(statement)).scalar_one_or_none() is not None


async def heartbeat(
    session: AsyncSession, job_id: uuid.UUID, token: uuid.UUID, now: datetime
) -> bool:
    """Record that the claim holder is alive; False when the claim is no longer its own."""
    result = await session.execute(
        update(IngestionJob)
        .where(
            IngestionJob.id == job_id,
            IngestionJob.claim_token == token,
            IngestionJob.status == JobStatus.running,
        )
        .values(heartbeat_at=now)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def finish(
    session: AsyncSession, job_id: uuid.UUID, status: JobStatus, error: str | None, now: datetime
) -> None:
    """End the job (call with the claim held)."""
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.id == job_id)
        .values(status=status, finished_at=now, last_error=error, claim_token=None)
    )


async def requeue(
    session: AsyncSession, job_id: uuid.UUID, *, available_at: datetime, error: str
) -> None:
    """Put the job back in the queue for a later attempt (call with the claim held)."""
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.id == job_id)
        .values(
            status=JobStatus.queued, available_at=available_at, last_error=error, claim_token=None
        )
    )
