"""The processing queue of documents (`ingestion_jobs`), all its SQL: the claim that lets
workers run in parallel and take turns between owners, and the fence.

Fairness: the next job is the oldest due job of the owner who has the fewest jobs running and
was served longest ago. So workers go round the owners with work waiting, one document each:
a user's one-page upload waits for one document of every other owner in the queue, not for
another user's backlog of thousands.

A claim gives the worker a fresh `claim_token`. Every write a worker makes for a job first
locks the job row and checks that the token is still its own (`hold_claim`), in the same
transaction as the write: a worker whose job was taken over (it stalled and was presumed
dead) can no longer write progress, results or the job's end.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Result, Uuid, any_, bindparam, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import (
    Document,
    DocumentStatus,
    DocumentVersion,
    IngestionJob,
    JobStatus,
)


async def enqueue(session: AsyncSession, document: Document) -> IngestionJob:
    """Queue the document for processing; it waits as `queued` until a worker takes it."""
    document.status = DocumentStatus.queued
    job = IngestionJob(document_id=document.id, owner_id=document.owner_id)
    session.add(job)
    await session.flush()
    return job


async def enqueue_version(
    session: AsyncSession, document: Document, version: DocumentVersion
) -> IngestionJob:
    """Queue a new version of the document; the document itself stays as it is meanwhile."""
    job = IngestionJob(document_id=document.id, owner_id=document.owner_id, version_id=version.id)
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


async def lock_unfinished(session: AsyncSession, document_ids: Sequence[uuid.UUID]) -> None:
    """Lock the documents' queued and running jobs, however many, in id order (as
    `hold_claims` locks a worker's group), before `retire_unfinished` ends them batch by
    batch: otherwise a group spanning two batches could deadlock with them."""
    documents = bindparam(None, list(document_ids), type_=ARRAY(Uuid()))
    await session.execute(
        select(IngestionJob.id)
        .where(
            IngestionJob.document_id == any_(documents),
            IngestionJob.status.in_((JobStatus.queued, JobStatus.running)),
        )
        .order_by(IngestionJob.id)
        .with_for_update()
    )


async def retire_unfinished(
    session: AsyncSession, document_ids: Sequence[uuid.UUID], now: datetime
) -> list[tuple[uuid.UUID, uuid.UUID | None]]:
    """End the documents' queued and running jobs (their owner changes: the work is queued
    again for the new one); a worker still running one loses its claim at its next step.
    Returns each retired job's (document id, version id)."""
    unfinished = (
        IngestionJob.document_id.in_(document_ids),
        IngestionJob.status.in_((JobStatus.queued, JobStatus.running)),
    )
    # Rows locked in id order first, as `hold_claims` takes them, so the two never deadlock.
    await session.execute(
        select(IngestionJob.id).where(*unfinished).order_by(IngestionJob.id).with_for_update()
    )
    result = await session.execute(
        update(IngestionJob)
        .where(*unfinished)
        .values(status=JobStatus.done, finished_at=now, last_error="superseded", claim_token=None)
        .returning(IngestionJob.document_id, IngestionJob.version_id)
    )
    return [(row.document_id, row.version_id) for row in result]


# A running job whose worker stopped beating (it died): taken over before anything queued.
_STALE_JOB = text(
    """
SELECT id FROM ingestion_jobs
WHERE status = 'running' AND coalesce(heartbeat_at, claimed_at) < :stale_before
ORDER BY claimed_at
LIMIT 1
FOR UPDATE SKIP LOCKED
"""
)

# The owners with work waiting, in the order workers serve them (fewest jobs running, served
# longest ago, oldest waiting first), each with the head of their queue. The owners are found
# by walking the queued-jobs index from one owner to the next (a loose index scan) and each
# head is the first entry of that owner's part of it: the cost is the number of owners with
# work waiting, not of jobs queued (ranking every queued job cost 3-4 us each: 100-170 ms a
# claim behind 30,000, so a backlog drained in quadratic time). No row is locked here.
_OWNERS_WAITING = text(
    """
WITH RECURSIVE waiting(owner_id) AS (
    SELECT (SELECT owner_id FROM ingestion_jobs WHERE status = 'queued'
            ORDER BY owner_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.owner_id FROM ingestion_jobs j
            WHERE j.status = 'queued' AND j.owner_id > w.owner_id
            ORDER BY j.owner_id LIMIT 1)
    FROM waiting w WHERE w.owner_id IS NOT NULL
)
SELECT w.owner_id, head.id AS head_id,
       (SELECT count(*) FROM ingestion_jobs r
        WHERE r.owner_id = w.owner_id AND r.status = 'running') AS running
FROM waiting w
CROSS JOIN LATERAL (
    SELECT q.id, q.available_at, q.created_at FROM ingestion_jobs q
    WHERE q.owner_id = w.owner_id AND q.status = 'queued' AND q.available_at <= :now
    ORDER BY q.available_at, q.created_at, q.id
    LIMIT 1
) head
WHERE w.owner_id IS NOT NULL
ORDER BY running,
         (SELECT max(c.claimed_at) FROM ingestion_jobs c WHERE c.owner_id = w.owner_id)
             NULLS FIRST,
         head.available_at, head.created_at, w.owner_id
"""
)
# A queued job locked for this claim: the head named (unless another worker is taking it), or
# the owner's first due job no other worker is taking.
_LOCK_HEAD = text(
    "SELECT id FROM ingestion_jobs WHERE id = :head AND status = 'queued' FOR UPDATE SKIP LOCKED"
)
_LOCK_NEXT_OF_OWNER = text(
    """
SELECT id FROM ingestion_jobs
WHERE owner_id = :owner AND status = 'queued' AND available_at <= :now
ORDER BY available_at, created_at, id
LIMIT 1
FOR UPDATE SKIP LOCKED
"""
)


async def claim_next(
    session: AsyncSession,
    *,
    worker_id: str,
    now: datetime,
    stale_after: timedelta,
    idle_owners_only: bool = False,
) -> IngestionJob | None:
    """Take the next runnable job (queued and due, or running without a recent heartbeat),
    taking turns between owners; with `idle_owners_only`, only a queued job of an owner who
    has no job running."""
    job_id = await _next_job_id(session, now, stale_after, idle_owners_only)
    if job_id is None:
        return None
    job = await session.get(IngestionJob, job_id)
    assert job is not None  # locked above
    job.status = JobStatus.running
    job.attempts += 1
    job.claimed_at = now
    job.heartbeat_at = now
    job.claimed_by = worker_id
    job.claim_token = uuid.uuid4()
    await session.flush()
    return job


async def _next_job_id(
    session: AsyncSession, now: datetime, stale_after: timedelta, idle_owners_only: bool
) -> uuid.UUID | None:
    """The job to claim, its row locked: a stale one, else the head of the first owner's queue
    in the rotation (the next head when another worker is taking that one, and only when
    every head is being taken, an owner's next job)."""
    if not idle_owners_only:
        stale = await session.execute(_STALE_JOB, {"stale_before": now - stale_after})
        if (job_id := _job_id(stale)) is not None:
            return job_id
    owners = (await session.execute(_OWNERS_WAITING, {"now": now})).all()
    if idle_owners_only:
        owners = [owner for owner in owners if owner.running == 0]
    for owner in owners:
        locked = await session.execute(_LOCK_HEAD, {"head": owner.head_id})
        if (job_id := _job_id(locked)) is not None:
            return job_id
    for owner in owners:
        locked = await session.execute(_LOCK_NEXT_OF_OWNER, {"owner": owner.owner_id, "now": now})
        if (job_id := _job_id(locked)) is not None:
            return job_id
    return None


def _job_id(result: Result[Any]) -> uuid.UUID | None:
    return cast(uuid.UUID | None, result.scalar_one_or_none())


# Where each waiting job stands. Workers serve the owners in a fixed rotation (the order of
# `_NEXT_JOB`: fewest running, served longest ago, oldest waiting), one job per owner per
# round, skipping owners whose queue ran dry. So the k-th job of an owner comes after k - 1
# full rounds (each owner's first k - 1 jobs, or all it has) and, in round k, after the owners
# ahead of its own that still have a k-th job.
_QUEUE_POSITIONS = text(
    """
WITH waiting AS (
    SELECT document_id, owner_id,
           row_number() OVER (PARTITION BY owner_id ORDER BY available_at, created_at, id) AS turn
    FROM ingestion_jobs
    WHERE status = 'queued'
),
owners AS (
    SELECT w.owner_id, count(*) AS waiting,
           (SELECT min(q.available_at) FROM ingestion_jobs q
            WHERE q.owner_id = w.owner_id AND q.status = 'queued') AS head_at,
           (SELECT count(*) FROM ingestion_jobs r
            WHERE r.owner_id = w.owner_id AND r.status = 'running') AS running,
           (SELECT max(c.claimed_at) FROM ingestion_jobs c
            WHERE c.owner_id = w.owner_id) AS last_claimed
    FROM waiting w
    GROUP BY w.owner_id
),
rotation AS (
    SELECT owner_id, waiting,
           row_number() OVER (ORDER BY running, last_claimed NULLS FIRST, head_at, owner_id)
               AS place
    FROM owners
)
SELECT w.document_id,
       1 + (SELECT sum(least(o.waiting, w.turn - 1)) FROM rotation o)
         + (SELECT count(*) FROM rotation o JOIN rotation mine ON mine.owner_id = w.owner_id
            WHERE o.place < mine.place AND o.waiting >= w.turn) AS position
FROM waiting w
WHERE w.document_id = ANY(:documents)
"""
)


async def queue_positions(
    session: AsyncSession, document_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, int]:
    """The place of each waiting document in the queue as it stands (1: the next a worker
    takes). Documents uploaded later by owners served earlier in the rotation can still go
    first. Only documents waiting for a worker are in the result."""
    if not document_ids:
        return {}
    rows = await session.execute(_QUEUE_POSITIONS, {"documents": list(document_ids)})
    return {row.document_id: int(row.position) for row in rows}


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


async def hold_claims(
    session: AsyncSession, claims: Mapping[uuid.UUID, uuid.UUID]
) -> set[uuid.UUID]:
    """`hold_claim` for several jobs (job id -> token) at once: the ids still held. The rows
    are locked in id order, as `retire_unfinished` locks them, so the two cannot deadlock."""
    statement = (
        select(IngestionJob.id)
        .where(
            tuple_(IngestionJob.id, IngestionJob.claim_token).in_(list(claims.items())),
            IngestionJob.status == JobStatus.running,
        )
        .order_by(IngestionJob.id)
        .with_for_update()
    )
    return set((await session.execute(statement)).scalars())


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


async def release(session: AsyncSession, job_id: uuid.UUID) -> None:
    """Give the job back to the queue as it was before the claim (call with the claim held):
    its worker is stopping, so the attempt does not count and it keeps its place."""
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.id == job_id)
        .values(
            status=JobStatus.queued,
            attempts=IngestionJob.attempts - 1,
            claim_token=None,
            claimed_by=None,
        )
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
