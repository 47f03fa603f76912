"""Small files read for the first time, several at once (`JobClaims.claim_group`): each file
is read alone, then their text, vectors and completions are written in one go (a
one-paragraph file spends less time in the model than in those fixed steps)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from docchat import tracing
from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, JobStatus
from docchat.extraction.kinds import FileKind
from docchat.ingestion.claims import ClaimedJob
from docchat.ingestion.pipeline import DocumentPipeline, IncompleteIndex, record
from docchat.kit.lease import stopped
from docchat.metrics import INGESTION_DURATION, INGESTION_JOBS
from docchat.retrieval import lexical
from docchat.retrieval.index import Chunk, DocumentRef

logger = logging.getLogger(__name__)
Outcomes = dict[uuid.UUID, str | None]  # job -> its outcome for the metrics (None: taken over)


class JobRunner(Protocol):
    """What a group hands back to the worker: a job to process alone, to end after a
    failure, or to give back to the queue."""

    async def process(self, job: ClaimedJob) -> None: ...

    async def settle(self, job: ClaimedJob, exc: Exception) -> str | None: ...

    async def release(self, job: ClaimedJob) -> None: ...


@dataclass(frozen=True)
class _Member:
    """A document of a group, read."""

    job: ClaimedJob
    document: Document
    page_count: int
    chunks: list[Chunk]
    document_date: date | None = None


class GroupIngestion:
    def __init__(self, pipeline: DocumentPipeline, runner: JobRunner) -> None:
        self.pipeline = pipeline
        self.claims = pipeline.claims
        self.sessionmaker = pipeline.claims.sessionmaker
        self.index = pipeline.index
        self.runner = runner

    async def process(self, jobs: Sequence[ClaimedJob]) -> None:
        """Process the group. A document's own failure stays its own; should anything the
        group shares fail, each document left goes the one-at-a-time way, where a failure is
        its own too. Every job keeps its heartbeat until it ends or its own processing
        starts."""
        started = time.perf_counter()
        lost = {job.id: asyncio.Event() for job in jobs}
        beating = {
            job.id: asyncio.create_task(self.claims.lease(job).heartbeats(lost[job.id]))
            for job in jobs
        }
        outcomes: Outcomes = {}
        handed_on: set[uuid.UUID] = set()  # given to `process`, which releases its own job
        try:
            alone = await self._attempt(jobs, lost, outcomes)
            _record_outcomes(outcomes, time.perf_counter() - started)
            for job in alone:
                await stopped(beating.pop(job.id))
                handed_on.add(job.id)
                try:
                    await self.runner.process(job)
                except asyncio.CancelledError:
                    raise
                except Exception:  # as in a lane: logged, the job taken again once stale
                    logger.exception("processing job %s failed", job.id)
        except BaseException:
            for job in jobs:
                if job.id not in outcomes and job.id not in handed_on:
                    await self.runner.release(job)
            raise
        finally:
            for task in beating.values():
                task.cancel()
            if beating:
                await asyncio.wait(beating.values())

    async def _attempt(
        self, jobs: Sequence[ClaimedJob], lost: dict[uuid.UUID, asyncio.Event], outcomes: Outcomes
    ) -> list[ClaimedJob]:
        """Run the group's jobs, recording each outcome; returns the jobs to process alone:
        those the group does not take, and on an unexpected error, every job not ended."""
        document_ids = [str(job.document_id) for job in jobs]
        with tracing.span("ingestion.group", {"docchat.document.ids": document_ids}, root=True):
            try:
                return await self._run(jobs, lost, outcomes)
            except asyncio.CancelledError:
                raise
            except Exception:
                left = [job for job in jobs if job.id not in outcomes]
                logger.exception("%d documents read together failed; each goes alone", len(left))
                return left

    async def _run(
        self, jobs: Sequence[ClaimedJob], lost: dict[uuid.UUID, asyncio.Event], outcomes: Outcomes
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
            await self._write(members, lost, outcomes)
        return alone

    async def _read_member(
        self, job: ClaimedJob, document: Document, outcomes: Outcomes
    ) -> _Member | None:
        """The document's chunks, or None when its file cannot be read (its job ended)."""
        try:
            kind = FileKind(document.content_type)
            prepared = await self.pipeline.read(document.storage_key, kind)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            outcomes[job.id] = await self.runner.settle(job, exc)
            return None
        chunks = [record(document, chunk) for chunk in prepared.chunks]
        return _Member(job, document, prepared.page_count, chunks, prepared.document_date)

    async def _write(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: Outcomes,
    ) -> None:
        """The members' text in one transaction, their vectors in one model run and one
        write, their completions in one transaction."""
        texts = [chunk.text for member in members for chunk in member.chunks]
        await self.pipeline.glosses.ready_for(texts)
        async with self._fenced(members, lost, outcomes) as (session, held):
            chunks = [chunk for member in held for chunk in member.chunks]
            with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
                await self.pipeline.write_rows(session, chunks)
                for member in held:
                    await documents_repository.set_extracted(
                        session,
                        member.document.id,
                        page_count=member.page_count,
                        chunk_count=len(member.chunks),
                        document_date=member.document_date,
                    )
        if chunks:
            vectors = await self.pipeline.embed(chunks)
            with tracing.span("ingestion.vector_write", {"docchat.chunks": len(chunks)}):
                await self.index.upsert(chunks, vectors)
        await self._complete(held, lost, outcomes)

    async def _complete(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: Outcomes,
    ) -> None:
        """Complete each member whose chunks both indexes hold (as a single document is);
        one they do not is retried as any incomplete document is."""
        stored = {m.job.id: await self.index.count(DocumentRef.of(m.document)) for m in members}
        incomplete: list[tuple[ClaimedJob, IncompleteIndex]] = []
        completed: list[_Member] = []
        deleted: list[DocumentRef] = []
        async with self._fenced(members, lost, outcomes) as (session, held):
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
            outcomes[job.id] = await self.runner.settle(job, exc)

    @contextlib.asynccontextmanager
    async def _fenced(
        self,
        members: Sequence[_Member],
        lost: dict[uuid.UUID, asyncio.Event],
        outcomes: Outcomes,
    ) -> AsyncIterator[tuple[AsyncSession, list[_Member]]]:
        """A transaction holding the rows of the members' jobs still ours (the fence of
        `kit.lease`, for several jobs at once), and those members; a job taken over
        meanwhile is left to its new worker."""
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


def _record_outcomes(outcomes: Outcomes, elapsed: float) -> None:
    for outcome in outcomes.values():
        if outcome is not None:
            INGESTION_JOBS.labels(outcome).inc()
        if outcome == "completed":
            INGESTION_DURATION.observe(elapsed)  # each was claimed when the group was
