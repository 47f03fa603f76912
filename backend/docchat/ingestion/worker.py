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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat import tracing
from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents import jobs as jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus, DocumentVersion, JobStatus
from docchat.documents.service import release_file
from docchat.documents.storage import FileStorage, StoredFileMissing
from docchat.extraction.chunking import TextChunk, title_of, with_header
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.extraction.sandbox import ExtractionSandbox, PreparedDocument
from docchat.kit.errors import DocchatError
from docchat.llm.embeddings import Embedder
from docchat.observability import INGESTION_DURATION, INGESTION_JOBS
from docchat.retrieval import lexical
from docchat.retrieval.index import Chunk, DocumentRef, VectorIndex, VectorStoreUnavailable

logger = logging.getLogger(__name__)
# Documents let in beside a long one may themselves let others in, down to this depth (each
# level keeps its document's chunks in memory while the one it let in runs).
MAX_INTERLEAVED = 3


class LostClaim(Exception):
    """Another worker holds the job now: stop without writing anything more."""


class IncompleteIndex(Exception):
    """The indexes do not hold every chunk after the writes (retried like any failure)."""


@dataclass(frozen=True)
class ClaimedJob:
    id: uuid.UUID
    document_id: uuid.UUID
    attempts: int
    token: uuid.UUID
    version_id: uuid.UUID | None = None  # a new version of the document, not the document


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


@dataclass(frozen=True)
class _Member:
    """A document of a group (`IngestionWorker._process_group`), read."""

    job: ClaimedJob
    document: Document
    page_count: int
    chunks: list[Chunk]


async def _stopped(task: asyncio.Task[None]) -> None:
    """Cancel a heartbeat task and wait for it to end (a cancellation of the caller still
    reaches the caller: `wait` does not raise the task's own)."""
    task.cancel()
    await asyncio.wait({task})


class WorkerParts(Protocol):
    """What a worker uses: the composition root (`Components`) has these among its parts."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    extractor: ExtractionSandbox
    embedder: Embedder
    vector_index: VectorIndex
    storage: FileStorage


class IngestionWorker:
    def __init__(self, parts: WorkerParts, worker_id: str | None = None) -> None:
        """`parts`: what the worker uses (the app's `Components` has them all); it keeps only
        those, not the whole."""
        self.settings = parts.settings
        self.sessionmaker = parts.sessionmaker
        self.extractor = parts.extractor
        self.embedder = parts.embedder
        self.index = parts.vector_index
        self.storage = parts.storage
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
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
        hand is then released (`_process`) before this returns."""
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
        `_claim_group`); False when there was nothing to do."""
        return await self._run_next() > 0

    async def run_until_idle(self, max_jobs: int = 1000) -> int:
        """Process jobs until none is runnable (used by tests and the CLI)."""
        done = 0
        while done < max_jobs and (ran := await self._run_next()):
            done += ran
        return done

    async def _run_next(self) -> int:
        """The number of jobs claimed and processed (0: nothing to do)."""
        claimed = await self._claim_group()
        if len(claimed) == 1:
            await self._process(claimed[0])
        elif claimed:
            await self._process_group(claimed)
        return len(claimed)

    # -- the claim and its fence ---------------------------------------------------------------

    async def _claim(self, *, idle_owners_only: bool = False) -> ClaimedJob | None:
        async with self.sessionmaker() as session:
            claimed = await self._claim_in(session, idle_owners_only=idle_owners_only)
            if claimed is not None:
                await self._set_waiting(session, claimed, False)
            await session.commit()
            return claimed

    async def _claim_in(
        self, session: AsyncSession, *, idle_owners_only: bool = False
    ) -> ClaimedJob | None:
        job = await jobs_repository.claim_next(
            session,
            worker_id=self.worker_id,
            now=utcnow(),
            stale_after=timedelta(seconds=self.settings.worker.stale_after_seconds),
            idle_owners_only=idle_owners_only,
        )
        if job is None:
            return None
        assert job.claim_token is not None
        return ClaimedJob(job.id, job.document_id, job.attempts, job.claim_token, job.version_id)

    async def _claim_group(self) -> list[ClaimedJob]:
        """The next job and, when it is a small file never read before, the jobs that follow
        it in the queue's rotation while they are too, up to `WORKER_GROUP_SIZE`: each is
        claimed as a claim of its own would take it, so the owners still take turns within a
        group. One transaction for all of them."""
        size = self.settings.worker.group_size
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
                await self._set_waiting(session, job, False)
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
            and document.size_bytes <= self.settings.worker.group_max_bytes
            and job.attempts <= self.settings.worker.max_attempts
        )

    @contextlib.asynccontextmanager
    async def _fenced(self, job: ClaimedJob) -> AsyncIterator[AsyncSession]:
        """A transaction that holds the job's row: it commits only while the claim is ours."""
        async with self.sessionmaker() as session:
            if not await jobs_repository.hold_claim(session, job.id, job.token):
                raise LostClaim(f"job {job.id} was taken over by another worker")
            yield session
            await session.commit()

    async def _heartbeats(self, job: ClaimedJob, lost: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(self.settings.worker.heartbeat_seconds)
            try:
                async with self.sessionmaker() as session:
                    alive = await jobs_repository.heartbeat(session, job.id, job.token, utcnow())
                    await session.commit()
            except Exception as exc:  # the database blinked: try again at the next beat
                logger.warning("heartbeat for job %s failed: %s", job.id, exc)
                continue
            if not alive:
                lost.set()
                return

    # -- processing ------------------------------------------------------------------------

    async def _process(self, job: ClaimedJob) -> None:
        started = time.perf_counter()
        lost = asyncio.Event()
        attributes: tracing.Attributes = {
            "docchat.document.id": str(job.document_id),
            "docchat.job.attempt": job.attempts,
        }
        # A trace of its own, also for a document run in between another's batches.
        with tracing.span("ingestion.job", attributes, root=True) as span:
            beating = asyncio.create_task(self._heartbeats(job, lost))  # in the job's trace
            try:
                outcome = await self._attempt(job, lost)
            except asyncio.CancelledError:
                await self._release(job)
                raise
            finally:
                await _stopped(beating)
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
                    page_count, chunk_count = await self._ingest(job, document, lost)
                else:
                    page_count, chunk_count = await self._ingest_version(job, document, lost)
            except (LostClaim, asyncio.CancelledError):
                raise
            except Exception as exc:
                return await self._settle(job, exc)
        except LostClaim as exc:
            logger.warning("%s; leaving it to that worker", exc)
            return None
        logger.info(
            "document %s ingested: %d pages, %d chunks", document.id, page_count, chunk_count
        )
        return "completed"

    async def _settle(self, job: ClaimedJob, exc: Exception) -> str | None:
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

    def _check(self, lost: asyncio.Event, job: ClaimedJob) -> None:
        if lost.is_set():
            raise LostClaim(f"job {job.id} was taken over by another worker")

    async def _read(self, key: str, kind: FileKind) -> PreparedDocument:
        """The stored file's text, in chunks (read from a local copy where files are remote)."""
        rag = self.settings.rag
        with tracing.span("ingestion.read", {"docchat.document.kind": kind.value}) as span:
            async with self.storage.local_copy(key) as path:
                prepared = await self.extractor.prepare(
                    path, kind, chunk_size=rag.chunk_size, chunk_overlap=rag.chunk_overlap
                )
            pages, chunks = prepared.page_count, len(prepared.chunks)
            tracing.set_attributes(span, {"docchat.pages": pages, "docchat.chunks": chunks})
            return prepared

    async def _ingest(
        self, job: ClaimedJob, document: Document, lost: asyncio.Event
    ) -> tuple[int, int]:
        """Pages and chunks of the document, with its vectors and lexical rows written."""
        rag = self.settings.rag
        prepared = await self._read(document.storage_key, FileKind(document.content_type))
        chunks = [self._record(document, chunk) for chunk in prepared.chunks]
        self._check(lost, job)
        ref = DocumentRef.of(document)
        # An earlier reading's vectors and rows go first. A document never read has none: its
        # rows and chunk count are written in one transaction (below), its vectors after.
        read_before = document.chunk_count is not None
        if read_before:
            # Not for a worker whose job was taken over: the vectors may be its successor's.
            async with self._fenced(job):
                pass
            await self.index.delete_document(ref)
        # The text goes in at once: inline answers read it while the vectors are made.
        with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
            async with self._fenced(job) as session:
                if read_before:
                    await lexical.delete_chunks(session, document.id)
                await lexical.add_chunks(
                    session, chunks, rag.lexical_language, [self._indexed(c) for c in chunks]
                )
                await documents_repository.set_extracted(
                    session, document.id, page_count=prepared.page_count, chunk_count=len(chunks)
                )
        await self._embed_all(job, chunks, lost)
        await self._complete(job, ref, len(chunks))
        return prepared.page_count, len(chunks)

    def _indexed(self, chunk: Chunk) -> str:
        """What the embedder and BM25 see of a chunk: with RAG_CHUNK_HEADER, the document's
        title first, so a passage that never names its subject is still found by it."""
        if not self.settings.rag.chunk_header:
            return chunk.text
        return with_header(title_of(chunk.filename), chunk.text)

    @staticmethod
    def _record(
        document: Document, chunk: TextChunk, version: DocumentVersion | None = None
    ) -> Chunk:
        return Chunk(
            document_id=document.id,
            chunk_index=chunk.index,
            text=chunk.text,
            page=chunk.page,
            location=chunk.location,
            owner_id=document.owner_id,
            visibility=document.visibility,
            filename=version.filename if version is not None else document.filename,
            version=version.number if version is not None else document.version,
        )

    async def _embed_all(
        self, job: ClaimedJob, chunks: Sequence[Chunk], lost: asyncio.Event
    ) -> None:
        """Embed and store the chunks batch by batch; every `interleave_seconds`, another
        owner's waiting document runs in between (`_let_another_owner_in`)."""
        batch_size = max(1, self.settings.embedding.batch_size)
        interval = self.settings.worker.interleave_seconds
        slice_ends = time.monotonic() + interval
        for start in range(0, len(chunks), batch_size):
            self._check(lost, job)
            last = start + batch_size >= len(chunks)
            await self._embed_and_store(job, chunks[start : start + batch_size], start, last)
            if time.monotonic() >= slice_ends and start + batch_size < len(chunks):
                await self._let_another_owner_in()
                slice_ends = time.monotonic() + interval

    async def _let_another_owner_in(self) -> None:
        """Process one waiting document of an owner with nothing running, if there is one,
        while the document in hand waits (its claim stays alive: its heartbeats go on)."""
        if self._interleaved >= MAX_INTERLEAVED:
            return
        other = await self._claim(idle_owners_only=True)
        if other is None:
            return
        logger.info("document %s runs in between a long document", other.document_id)
        self._interleaved += 1
        try:
            await self._process(other)
        finally:
            self._interleaved -= 1

    async def _embed_and_store(
        self, job: ClaimedJob, batch: Sequence[Chunk], before: int, last: bool
    ) -> None:
        """Embed and store one batch, then record the progress, but for the last batch: the
        completion that follows records it (a one-chunk document saves a transaction)."""
        texts = [self._indexed(chunk) for chunk in batch]
        embedding: tracing.Attributes = {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.request.model": self.embedder.name,
            "docchat.chunks": len(batch),
        }
        with tracing.span("embedding", embedding):
            vectors = await asyncio.to_thread(self.embedder.embed, texts)
        with tracing.span("ingestion.vector_write", {"docchat.chunks": len(batch)}):
            await self.index.upsert(batch, vectors)
        if last:
            return
        done = before + len(batch)
        async with self._fenced(job) as session:
            if job.version_id is None:
                await documents_repository.set_progress(session, job.document_id, done)
            else:
                await documents_repository.set_version_progress(session, job.version_id, done)

    async def _complete(self, job: ClaimedJob, ref: DocumentRef, chunk_count: int) -> None:
        """Completed only when both indexes hold exactly the document's chunks."""
        stored = await self.index.count(ref)
        async with self._fenced(job) as session:
            indexed = await lexical.count_chunks(session, job.document_id)
            if (stored, indexed) != (chunk_count, chunk_count):
                raise IncompleteIndex(
                    f"{stored} vectors and {indexed} lexical rows for {chunk_count} chunks"
                )
            live = await documents_repository.mark_completed(session, job.document_id, chunk_count)
            if not live:  # deleted while we worked: leave nothing of it behind
                await lexical.delete_chunks(session, job.document_id)
            await jobs_repository.finish(session, job.id, JobStatus.done, None, utcnow())
        if not live:
            await self.index.delete_document(ref)

    # -- small files read for the first time, several at once -----------------------------------

    async def _process_group(self, jobs: Sequence[ClaimedJob]) -> None:
        """Process a group of small files never read before (`_claim_group`) together: each
        file is read alone, then their text, vectors and completions are written in one go (a
        one-paragraph file spends less time in the model than in those fixed steps). A
        document's own failure stays its own; should anything the group shares fail, each
        document left goes the one-at-a-time way, where a failure is its own too. Every job
        keeps its heartbeat until it ends or its own processing starts."""
        started = time.perf_counter()
        lost = {job.id: asyncio.Event() for job in jobs}
        beating = {job.id: asyncio.create_task(self._heartbeats(job, lost[job.id])) for job in jobs}
        outcomes: dict[uuid.UUID, str | None] = {}
        handed_on: set[uuid.UUID] = set()  # given to `_process`, which releases its own job
        try:
            alone = await self._attempt_group(jobs, lost, outcomes)
            self._record_outcomes(outcomes, time.perf_counter() - started)
            for job in alone:
                await _stopped(beating.pop(job.id))
                handed_on.add(job.id)
                try:
                    await self._process(job)
                except asyncio.CancelledError:
                    raise
                except Exception:  # as in a lane: logged, the job taken again once stale
                    logger.exception("processing job %s failed", job.id)
        except BaseException:
            await self._release_all(
                [job for job in jobs if job.id not in outcomes and job.id not in handed_on]
            )
            raise
        finally:
            for task in beating.values():
                task.cancel()
            if beating:
                await asyncio.wait(beating.values())

    @staticmethod
    def _record_outcomes(outcomes: dict[uuid.UUID, str | None], elapsed: float) -> None:
        for outcome in outcomes.values():
            if outcome is not None:
                INGESTION_JOBS.labels(outcome).inc()
            if outcome == "completed":
                INGESTION_DURATION.observe(elapsed)  # each was claimed when the group was

    async def _release_all(self, jobs: Sequence[ClaimedJob]) -> None:
        for job in jobs:
            await self._release(job)

    async def _attempt_group(
        self,
        jobs: Sequence[ClaimedJob],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: dict[uuid.UUID, str | None],
    ) -> list[ClaimedJob]:
        """Run the group's jobs, recording each outcome; returns the jobs to process alone:
        those the group does not take, and on an unexpected error, every job not ended."""
        document_ids = [str(job.document_id) for job in jobs]
        with tracing.span("ingestion.group", {"docchat.document.ids": document_ids}, root=True):
            try:
                return await self._run_group(jobs, lost, outcomes)
            except asyncio.CancelledError:
                raise
            except Exception:
                left = [job for job in jobs if job.id not in outcomes]
                logger.exception("%d documents read together failed; each goes alone", len(left))
                return left

    async def _run_group(
        self,
        jobs: Sequence[ClaimedJob],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: dict[uuid.UUID, str | None],
    ) -> list[ClaimedJob]:
        async with self.sessionmaker() as session:
            documents = await documents_repository.live_by_id(
                session, [job.document_id for job in jobs]
            )
        alone: list[ClaimedJob] = []
        members: list[_Member] = []
        for job in jobs:
            document = documents.get(job.document_id)
            if document is None or document.chunk_count is not None:
                alone.append(job)  # deleted, or read since the claim: the single way says so
            elif (member := await self._read_member(job, document, outcomes)) is not None:
                members.append(member)
        if members:
            await self._write_group(members, lost, outcomes)
        return alone

    async def _read_member(
        self, job: ClaimedJob, document: Document, outcomes: dict[uuid.UUID, str | None]
    ) -> _Member | None:
        """The document's chunks, or None when its file cannot be read (its job ended)."""
        try:
            prepared = await self._read(document.storage_key, FileKind(document.content_type))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            outcomes[job.id] = await self._settle(job, exc)
            return None
        chunks = [self._record(document, chunk) for chunk in prepared.chunks]
        return _Member(job, document, prepared.page_count, chunks)

    async def _write_group(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: dict[uuid.UUID, str | None],
    ) -> None:
        """The members' text in one transaction, their vectors in one model run and one
        write, their completions in one transaction."""
        rag = self.settings.rag
        async with self._fenced_group(members, lost, outcomes) as (session, held):
            chunks = [chunk for member in held for chunk in member.chunks]
            with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
                await lexical.add_chunks(
                    session, chunks, rag.lexical_language, [self._indexed(c) for c in chunks]
                )
                for member in held:
                    await documents_repository.set_extracted(
                        session,
                        member.document.id,
                        page_count=member.page_count,
                        chunk_count=len(member.chunks),
                    )
        if chunks:
            embedding: tracing.Attributes = {
                "gen_ai.operation.name": "embeddings",
                "gen_ai.request.model": self.embedder.name,
                "docchat.chunks": len(chunks),
            }
            texts = [self._indexed(chunk) for chunk in chunks]
            with tracing.span("embedding", embedding):
                vectors = await asyncio.to_thread(self.embedder.embed, texts)
            with tracing.span("ingestion.vector_write", {"docchat.chunks": len(chunks)}):
                await self.index.upsert(chunks, vectors)
        await self._complete_group(held, lost, outcomes)

    async def _complete_group(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: dict[uuid.UUID, str | None],
    ) -> None:
        """Complete each member whose chunks both indexes hold (as `_complete` does); one
        they do not is retried as any incomplete document is."""
        stored = {m.job.id: await self.index.count(DocumentRef.of(m.document)) for m in members}
        incomplete: list[tuple[ClaimedJob, IncompleteIndex]] = []
        completed: list[_Member] = []
        deleted: list[DocumentRef] = []
        async with self._fenced_group(members, lost, outcomes) as (session, held):
            for member in held:
                expected = len(member.chunks)
                indexed = await lexical.count_chunks(session, member.document.id)
                if (stored[member.job.id], indexed) != (expected, expected):
                    counts = f"{stored[member.job.id]} vectors and {indexed} lexical rows"
                    incomplete.append((member.job, IncompleteIndex(f"{counts} for {expected}")))
                    continue
                if not await documents_repository.mark_completed(
                    session, member.document.id, expected
                ):  # deleted while we worked: leave nothing of it behind
                    await lexical.delete_chunks(session, member.document.id)
                    deleted.append(DocumentRef.of(member.document))
                await jobs_repository.finish(session, member.job.id, JobStatus.done, None, utcnow())
                completed.append(member)
        for member in completed:  # ended: nothing that follows may send them round again
            outcomes[member.job.id] = "completed"
            logger.info(
                "document %s ingested: %d pages, %d chunks",
                member.document.id,
                member.page_count,
                len(member.chunks),
            )
        for ref in deleted:
            try:
                await self.index.delete_document(ref)
            except Exception:  # only space: the vectors of a deleted document answer no one
                logger.exception("removing the vectors of deleted document %s", ref.id)
        for job, exc in incomplete:  # after the transaction: the job's own takes its row's lock
            outcomes[job.id] = await self._settle(job, exc)

    @contextlib.asynccontextmanager
    async def _fenced_group(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: dict[uuid.UUID, str | None],
    ) -> AsyncIterator[tuple[AsyncSession, list[_Member]]]:
        """A transaction holding the rows of the members' jobs still ours (`_fenced`), and
        those members; a job taken over meanwhile is left to its new worker."""
        async with self.sessionmaker() as session:
            claims = {m.job.id: m.job.token for m in members if not lost[m.job.id].is_set()}
            still_ours = await jobs_repository.hold_claims(session, claims) if claims else set()
            held = []
            for member in members:
                if member.job.id in still_ours:
                    held.append(member)
                else:
                    job = member.job
                    logger.warning("job %s was taken over; leaving it to that worker", job.id)
                    outcomes[job.id] = None
            yield session, held
            await session.commit()

    # -- new versions: read beside the current content, then take over in one transaction ----

    async def _ingest_version(
        self, job: ClaimedJob, document: Document, lost: asyncio.Event
    ) -> tuple[int, int]:
        """Read the new file and write its vectors under the new version (the current ones
        keep answering: searches ask for the document's current version); then, in one
        transaction, swap the lexical rows and the document's file and version; then remove
        the old vectors and file."""
        assert job.version_id is not None
        version = await self._load_version(job.version_id)
        rag = self.settings.rag
        prepared = await self._read(version.storage_key, FileKind(version.content_type))
        chunks = [self._record(document, chunk, version) for chunk in prepared.chunks]
        async with self._fenced(job) as session:
            await documents_repository.set_version_state(
                session, version.id, DocumentStatus.processing, chunk_count=len(chunks)
            )
        await self._embed_all(job, chunks, lost)
        new = DocumentRef(document.id, document.owner_id, version.number)
        stored = await self.index.count(new)
        if stored != len(chunks):
            raise IncompleteIndex(f"{stored} vectors for {len(chunks)} chunks")
        old_key = document.storage_key
        async with self._fenced(job) as session:
            live = await documents_repository.lock_live(session, document.id)
            if live is not None:
                with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
                    await lexical.delete_chunks(session, document.id)
                    await lexical.add_chunks(
                        session, chunks, rag.lexical_language, [self._indexed(c) for c in chunks]
                    )
                version.chunk_count = len(chunks)
                await documents_repository.adopt_version(
                    session, live, version, prepared.page_count
                )
            await jobs_repository.finish(session, job.id, JobStatus.done, None, utcnow())
        # The old vectors no longer answer (searches ask for the new version); now remove them.
        if live is None:
            await self.index.delete_document(new)
        else:
            await self.index.delete_document(new, except_version=version.number)
            await release_file(self.sessionmaker, self.storage, old_key)
        return prepared.page_count, len(chunks)

    async def _load_version(self, version_id: uuid.UUID) -> DocumentVersion:
        async with self.sessionmaker() as session:
            version = await documents_repository.get_version(session, version_id)
        if version is None:
            raise ExtractionError("The new version's record is gone")
        return version

    async def _set_waiting(self, session: AsyncSession, job: ClaimedJob, waiting: bool) -> None:
        if job.version_id is None:
            await documents_repository.set_waiting(session, job.document_id, waiting)
            return
        status = DocumentStatus.queued if waiting else DocumentStatus.processing
        await documents_repository.set_version_state(session, job.version_id, status)

    async def _mark_failed(self, session: AsyncSession, job: ClaimedJob, message: str) -> None:
        """The document failed; or, for a new version, only the version (the document's
        current content keeps answering)."""
        if job.version_id is None:
            await documents_repository.mark_failed(session, job.document_id, message)
            return
        await documents_repository.set_version_state(
            session, job.version_id, DocumentStatus.failed, error=message
        )

    async def _release(self, job: ClaimedJob) -> None:
        """Give the job back to the queue (the worker is stopping): queued again at once, its
        attempt not counted. Should this fail, the job is taken again once its heartbeats
        have stopped for `stale_after_seconds`."""
        try:
            async with self._fenced(job) as session:
                await jobs_repository.release(session, job.id)
                await self._set_waiting(session, job, True)
        except LostClaim:  # it ended a moment ago, or another worker has it: nothing to give
            return
        except Exception:
            logger.exception("job %s could not be handed back; it will be taken when stale", job.id)
            return
        logger.info("job %s handed back to the queue", job.id)

    async def _finish(self, job: ClaimedJob, status: JobStatus, error: str | None) -> None:
        async with self._fenced(job) as session:
            await jobs_repository.finish(session, job.id, status, error, utcnow())

    async def _fail(self, job: ClaimedJob, message: str) -> None:
        async with self._fenced(job) as session:
            await self._mark_failed(session, job, message[:2000])
            await jobs_repository.finish(
                session, job.id, JobStatus.failed, message[:2000], utcnow()
            )
        await self._discard_failed_version(job)

    async def _discard_failed_version(self, job: ClaimedJob) -> None:
        """A new version that failed leaves nothing behind: its file goes (unless another
        document uses the same bytes) and so do any vectors it wrote. The document and its
        current version are untouched. Best effort: a leftover is only disk space."""
        if job.version_id is None:
            return
        try:
            async with self.sessionmaker() as session:
                version = await documents_repository.get_version(session, job.version_id)
                document = await documents_repository.get_live(session, job.document_id)
            if version is not None:
                await release_file(self.sessionmaker, self.storage, version.storage_key)
            if document is not None:
                ref = DocumentRef.of(document)
                await self.index.delete_document(ref, except_version=document.version)
        except Exception:
            logger.exception("cleaning up the failed version of document %s", job.document_id)

    async def _retry_or_fail(self, job: ClaimedJob, exc: Exception) -> str:
        # The raw error stays with the job (for operators); the owner gets a description.
        raw = f"{type(exc).__name__}: {exc}"[:2000]
        if job.attempts >= self.settings.worker.max_attempts:
            reason = user_facing_reason(exc)
            message = f"Processing failed after {job.attempts} attempts: {reason}; try reprocessing"
            async with self._fenced(job) as session:
                await self._mark_failed(session, job, message)
                await jobs_repository.finish(session, job.id, JobStatus.failed, raw, utcnow())
            await self._discard_failed_version(job)
            return "failed"
        delay = timedelta(seconds=min(300, 2**job.attempts))
        async with self._fenced(job) as session:
            await jobs_repository.requeue(session, job.id, available_at=utcnow() + delay, error=raw)
            await self._set_waiting(session, job, True)
        return "retried"
