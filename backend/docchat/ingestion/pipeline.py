"""One document's way through the worker: read in the sandbox, its text into the lexical
index at once, its vectors batch by batch, then completed once both indexes hold every
chunk. Every write goes through the job's fence (`JobClaims.fenced`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from docchat import tracing
from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentVersion, JobStatus
from docchat.documents.storage import FileStorage
from docchat.extraction.chunking import TextChunk, indexed_text
from docchat.extraction.kinds import FileKind
from docchat.extraction.sandbox import ExtractionSandbox, PreparedDocument
from docchat.ingestion.claims import ClaimedJob, JobClaims
from docchat.kit.lease import LostClaim
from docchat.llm.embeddings import Embedder, reads
from docchat.retrieval import lexical
from docchat.retrieval.index import Chunk, DocumentRef, VectorIndex
from docchat.retrieval.languages import language_of
from docchat.retrieval.passage_glosses import PassageGlosses


class IncompleteIndex(Exception):
    """The indexes do not hold every chunk after the writes (retried like any failure)."""


def check(lost: asyncio.Event, job: ClaimedJob) -> None:
    """Stop (`LostClaim`) once the heartbeats found the job taken over."""
    if lost.is_set():
        raise LostClaim(f"job {job.id} was taken over by another worker")


def record(document: Document, chunk: TextChunk, version: DocumentVersion | None = None) -> Chunk:
    """A chunk as the indexes keep it."""
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


class DocumentPipeline:
    def __init__(
        self,
        settings: Settings,
        claims: JobClaims,
        extractor: ExtractionSandbox,
        embedder: Embedder,
        index: VectorIndex,
        storage: FileStorage,
        glosses: PassageGlosses,
        in_between: Callable[[], Awaitable[None]],
    ) -> None:
        """`glosses`: the English of chunks in other languages (`passage_glosses`);
        `in_between`: run while a long document waits between two of its batches (another
        owner's document, see `embed_all`)."""
        self.settings = settings
        self.claims = claims
        self.extractor = extractor
        self.embedder = embedder
        self.index = index
        self.storage = storage
        self.glosses = glosses
        self.in_between = in_between

    async def read(self, key: str, kind: FileKind) -> PreparedDocument:
        """The stored file's text, in chunks (read from a local copy where files are remote)."""
        indexing = self.settings.indexing
        with tracing.span("ingestion.read", {"docchat.document.kind": kind.value}) as span:
            async with self.storage.local_copy(key) as path:
                prepared = await self.extractor.prepare(
                    path, kind, chunk_size=indexing.chunk_size, chunk_overlap=indexing.chunk_overlap
                )
            pages, chunks = prepared.page_count, len(prepared.chunks)
            tracing.set_attributes(span, {"docchat.pages": pages, "docchat.chunks": chunks})
            return prepared

    def indexed(self, chunk: Chunk) -> str:
        """What the embedder and BM25 see of a chunk (`chunking.indexed_text`)."""
        return indexed_text(chunk.filename, chunk.text, header=self.settings.indexing.chunk_header)

    async def write_rows(self, session: AsyncSession, chunks: Sequence[Chunk]) -> None:
        """The chunks' BM25 rows (the caller commits; before its transaction, it awaited
        `glosses.ready_for` the chunks' text)."""
        await lexical.add_chunks(
            session,
            chunks,
            self.settings.indexing.lexical_language,
            [self.indexed(chunk) for chunk in chunks],
            self.glosses,
        )

    def embedded(self, chunk: Chunk) -> str:
        """What the embedder reads of a chunk: what BM25 reads, or for a chunk in a language
        the embedder cannot read, its English gloss where there is one (`passage_glosses`).
        Blocks while the dictionaries are compiled."""
        language = language_of(chunk.text)
        if reads(self.embedder, language):
            return self.indexed(chunk)
        gloss = self.glosses.of(chunk.text, language)
        text = chunk.text if gloss is None else gloss
        return indexed_text(chunk.filename, text, header=self.settings.indexing.chunk_header)

    async def embed(self, chunks: Sequence[Chunk]) -> list[list[float]]:
        """The chunks' vectors, made off the event loop."""
        embedding: tracing.Attributes = {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.request.model": self.embedder.name,
            "docchat.chunks": len(chunks),
        }

        def vectors() -> list[list[float]]:
            return self.embedder.embed([self.embedded(chunk) for chunk in chunks])

        with tracing.span("embedding", embedding):
            return await asyncio.to_thread(vectors)

    async def ingest(
        self, job: ClaimedJob, document: Document, lost: asyncio.Event
    ) -> tuple[int, int]:
        """Pages and chunks of the document, with its vectors and lexical rows written."""
        prepared = await self.read(document.storage_key, FileKind(document.content_type))
        chunks = [record(document, chunk) for chunk in prepared.chunks]
        check(lost, job)
        ref = DocumentRef.of(document)
        # An earlier reading's vectors and rows go first. A document never read has none: its
        # rows and chunk count are written in one transaction (below), its vectors after.
        read_before = document.chunk_count is not None
        if read_before:
            # Not for a worker whose job was taken over: the vectors may be its successor's.
            async with self.claims.fenced(job):
                pass
            await self.index.delete_document(ref)
        # The text goes in at once: inline answers read it while the vectors are made.
        await self.glosses.ready_for([chunk.text for chunk in chunks])
        with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
            async with self.claims.fenced(job) as session:
                if read_before:
                    await lexical.delete_chunks(session, document.id)
                await self.write_rows(session, chunks)
                await documents_repository.set_extracted(
                    session,
                    document.id,
                    page_count=prepared.page_count,
                    chunk_count=len(chunks),
                    document_date=prepared.document_date,
                )
        await self.embed_all(job, chunks, lost)
        await self._complete(job, ref, len(chunks))
        return prepared.page_count, len(chunks)

    async def embed_all(
        self, job: ClaimedJob, chunks: Sequence[Chunk], lost: asyncio.Event
    ) -> None:
        """Embed and store the chunks batch by batch; every `interleave_seconds`, another
        owner's waiting document runs in between (`in_between`)."""
        batch_size = max(1, self.settings.embedding.batch_size)
        interval = self.settings.worker.interleave_seconds
        slice_ends = time.monotonic() + interval
        for start in range(0, len(chunks), batch_size):
            check(lost, job)
            last = start + batch_size >= len(chunks)
            await self.embed_and_store(job, chunks[start : start + batch_size], start, last)
            if time.monotonic() >= slice_ends and start + batch_size < len(chunks):
                await self.in_between()
                slice_ends = time.monotonic() + interval

    async def embed_and_store(
        self, job: ClaimedJob, batch: Sequence[Chunk], before: int, last: bool
    ) -> None:
        """Embed and store one batch, then record the progress, but for the last batch: the
        completion that follows records it (a one-chunk document saves a transaction)."""
        vectors = await self.embed(batch)
        with tracing.span("ingestion.vector_write", {"docchat.chunks": len(batch)}):
            await self.index.upsert(batch, vectors)
        if last:
            return
        done = before + len(batch)
        async with self.claims.fenced(job) as session:
            if job.version_id is None:
                await documents_repository.set_progress(session, job.document_id, done)
            else:
                await documents_repository.set_version_progress(session, job.version_id, done)

    async def _complete(self, job: ClaimedJob, ref: DocumentRef, chunk_count: int) -> None:
        """Completed only when both indexes hold exactly the document's chunks."""
        stored = await self.index.count(ref)
        async with self.claims.fenced(job) as session:
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
