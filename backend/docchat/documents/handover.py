"""Giving documents to another owner, when the account that owns them is deleted and others
still read them (shared with everyone, or in collections with other members).

A document's owner is written in three places besides its row: its vectors live in the owner's
vector collection, `collection_documents` repeats the owner (to find a collection's owners in
one index step), and its ingestion jobs take turns by owner. The vectors are copied first,
with the store's own copy (nothing is embedded again); the old owner's copies stay until the
caller drops that owner's collection once the database has committed, so a failure anywhere
before leaves everything answering as it did. Work still to do on a document (reading it, or
a new version of it) is queued again for the new owner, since a worker already at it writes
under the old one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.documents import jobs_repository, repository
from docchat.documents.models import Document, DocumentStatus
from docchat.kit.errors import ServiceUnavailable
from docchat.retrieval.index import DocumentRef, VectorIndex, VectorStoreUnavailable

BATCH = 5000


async def hand_over(
    session: AsyncSession,
    vector_index: VectorIndex,
    documents: Sequence[Document],
    heir: uuid.UUID,
) -> None:
    """Make `heir` the owner of the documents, vectors and all."""
    if not documents:
        return
    for document in documents:
        try:
            await vector_index.copy_document(DocumentRef.of(document), heir)
        except VectorStoreUnavailable as exc:
            raise ServiceUnavailable(
                "The vector store is unavailable, so the documents cannot change hands; try again"
            ) from exc
    ids = [document.id for document in documents]
    unfinished: list[tuple[uuid.UUID, uuid.UUID | None]] = []
    await jobs_repository.lock_unfinished(session, ids)
    for start in range(0, len(ids), BATCH):  # a statement takes at most 32,767 parameters
        batch = ids[start : start + BATCH]
        await repository.set_collection_entries_owner(session, batch, heir)
        unfinished += await jobs_repository.retire_unfinished(session, batch, utcnow())
    for document in documents:
        document.owner_id = heir
        document.category_id = None  # the categories were the old owner's
    await session.flush()
    by_id = {document.id: document for document in documents}
    for document_id, version_id in dict.fromkeys(unfinished):
        document = by_id[document_id]
        if version_id is None:
            document.pages_done = document.chunks_done = 0
            await jobs_repository.enqueue(session, document)
            continue
        version = await repository.get_version(session, version_id)
        if version is not None and version.status != DocumentStatus.failed:
            await jobs_repository.enqueue_version(session, document, version)
