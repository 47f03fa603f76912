"""The ingestion worker: claims jobs from Postgres and turns files into vectors.

Jobs carry only ids; the worker opens its own sessions, so a job is only seen after the
upload's transaction committed. The file is read in a sandboxed child process with time,
CPU and memory limits, so a hostile file fails alone. While it works the worker sends a
heartbeat; a job whose heartbeat stops (its worker died) is taken again within
`stale_after_seconds`. Every write goes through the claim's fence, so a worker that lost
its job to another cannot write over it, and every write is idempotent (chunks are keyed
by document and index), so a retry replaces what an earlier attempt left.

No document holds a worker for long while others wait: every `interleave_seconds` of
embedding a long document, the worker takes a waiting document of an owner who has nothing
running and processes it in between. A worker told to stop hands the job it holds back to
the queue at once (not counted as an attempt), so stopping never waits for a long document.

Here: the lanes, and how a job ends. Claims and their leases are in `claims.py` (on
`kit.lease`), one document's way in `pipeline.py`, small files read together in `groups.py`,
new versions in `versions.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat import tracing
from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, JobStatus
from docchat.documents.storage import FileStorage, StoredFileMissing
from docchat.extraction.reader import ExtractionError
from docchat.extraction.sandbox import ExtractionSandbox
from docchat.ingestion.claims import ClaimedJob, JobClaims, mark_failed, set_waiting
from docchat.ingestion.groups import GroupIngestion
from docchat.ingestion.pipeline import DocumentPipeline, IncompleteIndex
from docchat.ingestion.versions import discard_failed_version, ingest_version
from docchat.kit.errors import DocchatError
from docchat.kit.lease import LostClaim, worker_name
from docchat.llm.embeddings import Embedder
from docchat.metrics import INGESTION_DURATION, INGESTION_JOBS
from docchat.retrieval.index import VectorIndex, VectorStoreUnavailable
from docchat.retrieval.passage_glosses import PassageGlosses

logger = logging.getLogger(__name__)
# Documents let in beside a long one may themselves let others in, down to this depth (each
# level keeps its document's chunks in memory while the one it let in runs).
MAX_INTERLEAVED = 3


def user_facing_reason(exc: Exception) -> str:
    """What a document's owner is told of an unexpected failure: our own errors say what
    happened; anything else (a database error, say) is described, never quoted."""
    if isinstance(exc, DocchatError):
        return exc.message
    if isinstance(exc, VectorStoreUnavailable):
        return "the vector store was unavailable"
    if isinstance(exc, IncompleteIndex):
        return "the index did not take every chunk"
    if isinstance(exc, ConnectionError | TimeoutError | OSError):
        return "a service it needs was unreachable"
    return "an internal error occurred"


class WorkerParts(Protocol):
    """What a worker uses: the composition root (`Components`) has these among its parts."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    extractor: ExtractionSandbox
    embedder: Embedder
    vector_index: VectorIndex
    storage: FileStorage
    glosses: PassageGlosses


class IngestionWorker:
    def __init__(self, parts: WorkerParts, worker_id: str | None = None) -> None:
        """`parts`: what the worker uses (the app's `Components` has them all); it keeps only
        those, not the whole."""
        self.settings = parts.settings
        self.sessionmaker = parts.sessionmaker
        self.index = parts.vector_index
        self.storage = parts.storage
        self.worker_id = worker_id or worker_name()
        self.claims = JobClaims(self.sessionmaker, self.settings.worker, self.worker_id)
        self.pipeline = DocumentPipeline(
            self.settings,
            self.claims,
            parts.extractor,
            parts.embedder,
            self.index,
            self.storage,
            parts.glosses,
            in_between=self._let_another_owner_in,
        )
        self.groups = GroupIngestion(self.pipeline, self)
        self._interleaved = 0  # documents being processed in between others, now

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Process jobs until `stop` is set, `WORKER_LANES` at a time; a job in hand then goes
        back to the queue."""
        logger.info("ingestion worker %s started", self.worker_id)
        lanes = max(1, self.settings.worker.lanes)
        await asyncio.gather(*(self._lane(stop) for _ in range(lanes)))
        logger.info("ingestion worker %s stopped", self.worker_id)

    async def _lane(self, stop: asyncio.Event) -> None:
        """One document after another until `stop` is set. Lanes of one worker claim apart
        (each claim is its own transaction), so a small file's reading and writing runs
        while another lane's document is in the embedding model."""
        while not stop.is_set():
            try:
                worked = await self._run_once_until(stop)
            except Exception:
                logger.exception("ingestion worker iteration failed; retrying")
                worked = False
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.worker.poll_seconds)

    async def _run_once_until(self, stop: asyncio.Event) -> bool:
        """`run_once`, cut short when `stop` is set (or this task is cancelled): the job in
        hand is then released (`process`) before this returns."""
        work = asyncio.create_task(self.run_once())
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not work.done():
                work.cancel()
                await asyncio.wait({work})
        return work.cancelled() or work.result()

    async def run_once(self) -> bool:
        """Claim and process the next job (with the small files claimed beside it, see
        `JobClaims.claim_group`); False when there was nothing to do."""
        return await self._run_next() > 0

    async def run_until_idle(self, max_jobs: int = 1000) -> int:
        """Process jobs until none is runnable (used by tests and the CLI)."""
        done = 0
        while done < max_jobs and (ran := await self._run_next()):
            done += ran
        return done

    async def _run_next(self) -> int:
        """The number of jobs claimed and processed (0: nothing to do)."""
        claimed = await self.claims.claim_group()
        if len(claimed) == 1:
            await self.process(claimed[0])
        elif claimed:
            await self.groups.process(claimed)
        return len(claimed)

    # -- processing ------------------------------------------------------------------------

    async def process(self, job: ClaimedJob) -> None:
        """Run one claimed job to its end (or hand it back, should this be cancelled)."""
        started = time.perf_counter()
        attributes: tracing.Attributes = {
            "docchat.document.id": str(job.document_id),
            "docchat.job.attempt": job.attempts,
        }
        # A trace of its own, also for a document run in between another's batches.
        with tracing.span("ingestion.job", attributes, root=True) as span:
            async with self.claims.lease(job).kept_alive() as lost:  # beats in the job's trace
                try:
                    outcome = await self._attempt(job, lost)
                except asyncio.CancelledError:
                    await self.release(job)
                    raise
            tracing.set_attributes(span, {"docchat.job.outcome": outcome})
        if outcome is not None:
            INGESTION_JOBS.labels(outcome).inc()
        if outcome == "completed":
            INGESTION_DURATION.observe(time.perf_counter() - started)

    async def _attempt(self, job: ClaimedJob, lost: asyncio.Event) -> str | None:
        """Run the job; the outcome for the metrics (None when the job was taken over)."""
        try:
            document = await self._load_document(job.document_id)
            if document is None:
                await self._finish(job, JobStatus.done, "document deleted")
                return "deleted"
            if job.attempts > self.settings.worker.max_attempts:
                await self._fail(job, "Processing was interrupted too many times; try reprocessing")
                return "failed"
            try:
                if job.version_id is None:
                    page_count, chunk_count = await self.pipeline.ingest(job, document, lost)
                else:
                    page_count, chunk_count = await ingest_version(
                        self.pipeline, job, document, lost
                    )
            except (LostClaim, asyncio.CancelledError):
                raise
            except Exception as exc:
                return await self.settle(job, exc)
        except LostClaim as exc:
            logger.warning("%s; leaving it to that worker", exc)
            return None
        logger.info(
            "document %s ingested: %d pages, %d chunks", document.id, page_count, chunk_count
        )
        return "completed"

    async def settle(self, job: ClaimedJob, exc: Exception) -> str | None:
        """End a job whose processing raised `exc` (failed, or queued again for another
        attempt); the outcome for the metrics, None when the job was taken over meanwhile."""
        try:
            if isinstance(exc, ExtractionError):
                await self._fail(job, str(exc))
                return "failed"
            if isinstance(exc, StoredFileMissing):
                await self._fail(job, "The uploaded file is missing from storage; upload it again")
                return "failed"
            logger.error(
                "document %s failed on attempt %d", job.document_id, job.attempts, exc_info=exc
            )
            return await self._retry_or_fail(job, exc)
        except LostClaim as lost:
            logger.warning("%s; leaving it to that worker", lost)
            return None

    async def _load_document(self, document_id: uuid.UUID) -> Document | None:
        async with self.sessionmaker() as session:
            return await documents_repository.get_live(session, document_id)

    async def _let_another_owner_in(self) -> None:
        """Process one waiting document of an owner with nothing running, if there is one,
        while the document in hand waits (its claim stays alive: its heartbeats go on)."""
        if self._interleaved >= MAX_INTERLEAVED:
            return
        other = await self.claims.claim(idle_owners_only=True)
        if other is None:
            return
        logger.info("document %s runs in between a long document", other.document_id)
        self._interleaved += 1
        try:
            await self.process(other)
        finally:
            self._interleaved -= 1

    async def release(self, job: ClaimedJob) -> None:
        """Give the job back to the queue (the worker is stopping): queued again at once, its
        attempt not counted. Should this fail, the job is taken again once its heartbeats
        have stopped for `stale_after_seconds`."""
        try:
            async with self.claims.fenced(job) as session:
                await jobs_repository.release(session, job.id)
                await set_waiting(session, job, True)
        except LostClaim:  # it ended a moment ago, or another worker has it: nothing to give
            return
        except Exception:
            logger.exception("job %s could not be handed back; it will be taken when stale", job.id)
            return
        logger.info("job %s handed back to the queue", job.id)

    async def _finish(self, job: ClaimedJob, status: JobStatus, error: str | None) -> None:
        async with self.claims.fenced(job) as session:
            await jobs_repository.finish(session, job.id, status, error, utcnow())

    async def _fail(self, job: ClaimedJob, message: str) -> None:
        async with self.claims.fenced(job) as session:
            await mark_failed(session, job, message[:2000])
            await jobs_repository.finish(
                session, job.id, JobStatus.failed, message[:2000], utcnow()
            )
        await self._discard_failed_version(job)

    async def _discard_failed_version(self, job: ClaimedJob) -> None:
        await discard_failed_version(self.sessionmaker, self.storage, self.index, job)

    async def _retry_or_fail(self, job: ClaimedJob, exc: Exception) -> str:
        # The raw error stays with the job (for operators); the owner gets a description.
        raw = f"{type(exc).__name__}: {exc}"[:2000]
        if job.attempts >= self.settings.worker.max_attempts:
            reason = user_facing_reason(exc)
            message = f"Processing failed after {job.attempts} attempts: {reason}; try reprocessing"
            async with self.claims.fenced(job) as session:
                await mark_failed(session, job, message)
                await jobs_repository.finish(session, job.id, JobStatus.failed, raw, utcnow())
            await self._discard_failed_version(job)
            return "failed"
        delay = timedelta(seconds=min(300, 2**job.attempts))
        async with self.claims.fenced(job) as session:
            await jobs_repository.requeue(session, job.id, available_at=utcnow() + delay, error=raw)
            await set_waiting(session, job, True)
        return "retried"
