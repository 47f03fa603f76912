"""The ingestion worker: claims jobs from Postgres and turns files into vectors.

Jobs carry only ids; the worker opens its own sessions, so a job is only seen after the
upload's transaction committed. Processing is idempotent (a document's vectors are replaced
as a whole), a crashed worker's job is claimed again once it is stale, and CPU work
(extraction, embedding) runs in threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import update

# Every table, so foreign keys (documents -> categories, ...) resolve in a worker-only process.
import docchat.models  # noqa: F401
from docchat.components import Components
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents.filetypes import FileKind
from docchat.documents.models import Document, DocumentStatus
from docchat.ingestion import repository as jobs_repository
from docchat.ingestion.chunking import TextChunk, chunk_document
from docchat.ingestion.extraction import ExtractionError, extract
from docchat.ingestion.models import IngestionJob, JobStatus
from docchat.observability import INGESTION_DURATION, INGESTION_JOBS
from docchat.retrieval import lexical
from docchat.retrieval.vectorstore import Chunk, DocumentRef

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimedJob:
    id: uuid.UUID
    document_id: uuid.UUID
    attempts: int


class IngestionWorker:
    def __init__(self, components: Components, worker_id: str | None = None) -> None:
        self.components = components
        self.settings = components.settings
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"

    async def run_forever(self, stop: asyncio.Event) -> None:
        logger.info("ingestion worker %s started", self.worker_id)
        while not stop.is_set():
            try:
                worked = await self.run_once()
            except Exception:
                logger.exception("ingestion worker iteration failed; retrying")
                worked = False
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.worker.poll_seconds)
        logger.info("ingestion worker %s stopped", self.worker_id)

    async def run_once(self) -> bool:
        """Claim and process one job; False when there was nothing to do."""
        job = await self._claim()
        if job is None:
            return False
        await self._process(job)
        return True

    async def run_until_idle(self, max_jobs: int = 1000) -> int:
        """Process jobs until none is runnable (used by tests and the CLI)."""
        done = 0
        while done < max_jobs and await self.run_once():
            done += 1
        return done

    async def _claim(self) -> ClaimedJob | None:
        async with self.components.sessionmaker() as session:
            job = await jobs_repository.claim_next(
                session,
                worker_id=self.worker_id,
                now=utcnow(),
                stale_after=timedelta(seconds=self.settings.worker.stale_after_seconds),
            )
            claimed = ClaimedJob(job.id, job.document_id, job.attempts) if job else None
            await session.commit()
            return claimed

    async def _process(self, job: ClaimedJob) -> None:
        started = time.perf_counter()
        document = await self._load_document(job.document_id)
        if document is None:
            await self._finish_job(job, JobStatus.done, "document deleted")
            return
        if job.attempts > self.settings.worker.max_attempts:
            await self._fail(job, "Processing was interrupted too many times; try reprocessing")
            return
        try:
            page_count, chunk_count = await self._ingest(document)
        except ExtractionError as exc:
            await self._fail(job, str(exc))
            return
        except Exception as exc:
            logger.exception("document %s failed on attempt %d", document.id, job.attempts)
            await self._retry_or_fail(job, exc)
            return
        await self._complete(job, document, chunk_count)
        INGESTION_JOBS.labels("completed").inc()
        INGESTION_DURATION.observe(time.perf_counter() - started)
        logger.info(
            "document %s ingested: %d pages, %d chunks in %.2fs",
            document.id,
            page_count,
            chunk_count,
            time.perf_counter() - started,
        )

    async def _load_document(self, document_id: uuid.UUID) -> Document | None:
        async with self.components.sessionmaker() as session:
            return await documents_repository.get_live(session, document_id)

    def _extract_and_chunk(self, document: Document) -> tuple[int, list[TextChunk]]:
        """Blocking: parse the file and split it (both CPU-bound, so never on the event loop)."""
        path = self.components.storage.path(document.storage_key)
        extracted = extract(path, FileKind(document.content_type))
        rag = self.settings.rag
        return extracted.page_count, chunk_document(
            extracted, size=rag.chunk_size, overlap=rag.chunk_overlap
        )

    async def _ingest(self, document: Document) -> tuple[int, int]:
        """Pages and chunks of the document, its vectors and lexical rows written."""
        page_count, chunks = await asyncio.to_thread(self._extract_and_chunk, document)
        store = self.components.vector_store
        await asyncio.to_thread(store.delete_document, DocumentRef.of(document))
        async with self.components.sessionmaker() as session:
            await lexical.delete_chunks(session, document.id)
            await session.execute(
                update(Document)
                .where(Document.id == document.id)
                .values(
                    page_count=page_count,
                    pages_done=page_count,
                    chunk_count=len(chunks),
                    chunks_done=0,
                )
            )
            await session.commit()
        batch_size = max(1, self.settings.embedding.batch_size)
        for start in range(0, len(chunks), batch_size):
            await self._embed_and_store(document, chunks[start : start + batch_size], start)
        return page_count, len(chunks)

    async def _embed_and_store(
        self, document: Document, batch: Sequence[TextChunk], before: int
    ) -> None:
        """Vectors into the store, then text into the lexical index with the progress."""
        vectors = await asyncio.to_thread(
            self.components.embedder.embed, [chunk.text for chunk in batch]
        )
        records = [
            Chunk(
                document_id=document.id,
                chunk_index=chunk.index,
                text=chunk.text,
                page=chunk.page,
                owner_id=document.owner_id,
                visibility=document.visibility,
                filename=document.filename,
            )
            for chunk in batch
        ]
        await asyncio.to_thread(self.components.vector_store.upsert, records, vectors)
        async with self.components.sessionmaker() as session:
            await lexical.add_chunks(session, records, self.settings.rag.lexical_language)
            await session.execute(
                update(Document)
                .where(Document.id == document.id)
                .values(chunks_done=before + len(batch))
            )
            await session.commit()

    async def _update_document(self, document_id: uuid.UUID, **values: object) -> None:
        async with self.components.sessionmaker() as session:
            await session.execute(
                update(Document).where(Document.id == document_id).values(**values)
            )
            await session.commit()

    async def _finish_job(self, job: ClaimedJob, status: JobStatus, error: str | None) -> None:
        async with self.components.sessionmaker() as session:
            await session.execute(
                update(IngestionJob)
                .where(IngestionJob.id == job.id)
                .values(status=status, finished_at=utcnow(), last_error=error)
            )
            await session.commit()

    async def _complete(self, job: ClaimedJob, ingested: Document, chunk_count: int) -> None:
        async with self.components.sessionmaker() as session:
            document = await documents_repository.get_live(session, job.document_id)
            if document is None:
                # Deleted while we worked: leave nothing of it in the vector store.
                await asyncio.to_thread(
                    self.components.vector_store.delete_document, DocumentRef.of(ingested)
                )
                await lexical.delete_chunks(session, job.document_id)
            else:
                document.status = DocumentStatus.completed
                document.error = None
                document.chunk_count = chunk_count
                document.chunks_done = chunk_count
            await session.commit()
        await self._finish_job(job, JobStatus.done, None)

    async def _fail(self, job: ClaimedJob, message: str) -> None:
        INGESTION_JOBS.labels("failed").inc()
        await self._update_document(
            job.document_id, status=DocumentStatus.failed, error=message[:2000]
        )
        await self._finish_job(job, JobStatus.failed, message[:2000])

    async def _retry_or_fail(self, job: ClaimedJob, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"[:2000]
        if job.attempts >= self.settings.worker.max_attempts:
            await self._fail(job, f"Processing failed after {job.attempts} attempts: {reason}")
            return
        INGESTION_JOBS.labels("retried").inc()
        delay = timedelta(seconds=min(300, 2**job.attempts))
        async with self.components.sessionmaker() as session:
            await session.execute(
                update(IngestionJob)
                .where(IngestionJob.id == job.id)
                .values(status=JobStatus.queued, available_at=utcnow() + delay, last_error=reason)
            )
            await session.commit()
