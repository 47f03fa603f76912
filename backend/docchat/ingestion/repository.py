"""All SQL for ingestion jobs, including the claim that makes workers safe to run in parallel."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.ingestion.models import IngestionJob, JobStatus


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
    """Take the oldest runnable job: queued and due, or running on a worker presumed dead."""
    statement = (
        select(IngestionJob)
        .where(
            or_(
                (IngestionJob.status == JobStatus.queued) & (IngestionJob.available_at <= now),
                (IngestionJob.status == JobStatus.running)
                & (IngestionJob.claimed_at < now - stale_after),
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
    job.claimed_by = worker_id
    await session.flush()
    return job
