"""New versions of a document: read beside the current content, then take over in one
transaction; a version that fails leaves nothing behind."""

from __future__ import annotations

import asyncio
import logging
import uuid

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat import tracing
from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus, DocumentVersion, JobStatus
from docchat.documents.service import release_file
from docchat.documents.storage import FileStorage
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.ingestion.claims import ClaimedJob
from docchat.ingestion.pipeline import DocumentPipeline, IncompleteIndex, record
from docchat.retrieval import lexical
from docchat.retrieval.index import DocumentRef, VectorIndex

logger = logging.getLogger(__name__)


async def ingest_version(
    pipeline: DocumentPipeline, job: ClaimedJob, document: Document, lost: asyncio.Event
) -> tuple[int, int]:
    """Read the new file and write its vectors under the new version (the current ones
    keep answering: searches ask for the document's current version); then, in one
    transaction, swap the lexical rows and the document's file and version; then remove
    the old vectors and file."""
    assert job.version_id is not None
    claims, index = pipeline.claims, pipeline.index
    version = await _load_version(claims.sessionmaker, job.version_id)
    prepared = await pipeline.read(version.storage_key, FileKind(version.content_type))
    chunks = [record(document, chunk, version) for chunk in prepared.chunks]
    async with claims.fenced(job) as session:
        await documents_repository.set_version_state(
            session, version.id, DocumentStatus.processing, chunk_count=len(chunks)
        )
    await pipeline.embed_all(job, chunks, lost)
    new = DocumentRef(document.id, document.owner_id, version.number)
    stored = await index.count(new)
    if stored != len(chunks):
        raise IncompleteIndex(f"{stored} vectors for {len(chunks)} chunks")
    old_key = document.storage_key
    await pipeline.glosses.ready_for([chunk.text for chunk in chunks])
    async with claims.fenced(job) as session:
        live = await documents_repository.lock_live(session, document.id)
        if live is not None:
            with tracing.span("ingestion.lexical", {"docchat.chunks": len(chunks)}):
                await lexical.delete_chunks(session, document.id)
                await pipeline.write_rows(session, chunks)
            version.chunk_count = len(chunks)
            await documents_repository.adopt_version(
                session, live, version, prepared.page_count, prepared.document_date
            )
        await jobs_repository.finish(session, job.id, JobStatus.done, None, utcnow())
    # The old vectors no longer answer (searches ask for the new version); now remove them.
    if live is None:
        await index.delete_document(new)
    else:
        await index.delete_document(new, except_version=version.number)
        await release_file(claims.sessionmaker, pipeline.storage, old_key)
    return prepared.page_count, len(chunks)


async def _load_version(
    sessionmaker: async_sessionmaker[AsyncSession], version_id: uuid.UUID
) -> DocumentVersion:
    async with sessionmaker() as session:
        version = await documents_repository.get_version(session, version_id)
    if version is None:
        raise ExtractionError("The new version's record is gone")
    return version


async def discard_failed_version(
    sessionmaker: async_sessionmaker[AsyncSession],
    storage: FileStorage,
    index: VectorIndex,
    job: ClaimedJob,
) -> None:
    """A new version that failed leaves nothing behind: its file goes (unless another
    document uses the same bytes) and so do any vectors it wrote. The document and its
    current version are untouched. Best effort: a leftover is only disk space."""
    if job.version_id is None:
        return
    try:
        async with sessionmaker() as session:
            version = await documents_repository.get_version(session, job.version_id)
            document = await documents_repository.get_live(session, job.document_id)
        if version is not None:
            await release_file(sessionmaker, storage, version.storage_key)
        if document is not None:
            ref = DocumentRef.of(document)
            await index.delete_document(ref, except_version=document.version)
    except Exception:
        logger.exception("cleaning up the failed version of document %s", job.document_id)
