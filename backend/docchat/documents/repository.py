"""All SQL for documents. `readable_by` is the data-leak boundary: every read starts there."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Select,
    Uuid,
    and_,
    any_,
    bindparam,
    func,
    or_,
    select,
    union,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from docchat.db import advisory_xact_lock, utcnow
from docchat.documents.models import Document, DocumentStatus, DocumentVersion, Visibility
from docchat.kit.matching import contains
from docchat.membership.access import UserId, shared_document_ids
from docchat.membership.models import EVERYONE_ID, CollectionDocument
from docchat.retrieval.models import DocumentChunk
from docchat.users.models import User


def readable_by(user: User) -> Select[Document]:
    """Documents `user` may read, never deleted ones: their own, those shared with everyone,
    and those in a collection the user (or one of their groups) is a member of."""
    return select(Document).where(readable_condition(user.id))


def readable_condition(user_id: UserId) -> ColumnElement[bool]:
    """What `readable_by` selects, as a condition on `Document`."""
    return and_(
        Document.deleted_at.is_(None),
        or_(
            Document.owner_id == user_id,
            Document.visibility == Visibility.shared,
            Document.id.in_(shared_document_ids(user_id)),
        ),
    )


_UUIDS = ARRAY(Uuid())


def in_collections(collection_ids: Sequence[uuid.UUID]) -> ColumnElement[bool]:
    """A document condition: in one of these collections (Everyone: shared with everyone)."""
    return _in_collections(
        bindparam(None, list(collection_ids), type_=_UUIDS),
        bindparam(None, EVERYONE_ID in collection_ids, type_=Boolean()),
    )


def _in_collections(
    collection_ids: ColumnElement[Any], everyone: ColumnElement[bool]
) -> ColumnElement[bool]:
    """`in_collections` over bound parameters: the collections' ids as an array, and whether
    Everyone (which holds every document shared with everyone) is among them."""
    members = select(CollectionDocument.document_id).where(
        CollectionDocument.collection_id == any_(collection_ids)
    )
    return or_(Document.id.in_(members), and_(everyone, Document.visibility == Visibility.shared))


def named_like(fragment: str) -> ColumnElement[bool]:
    """File names containing `fragment`, in any case (`%` and `_` taken literally)."""
    return contains(Document.filename, fragment)


async def get_readable(
    session: AsyncSession, user: User, document_id: uuid.UUID, *, for_update: bool = False
) -> Document | None:
    statement = readable_by(user).where(Document.id == document_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def readable_among(
    session: AsyncSession,
    user: User,
    document_ids: Sequence[uuid.UUID],
    *,
    status: DocumentStatus | None = None,
) -> list[Document]:
    statement = readable_by(user).where(Document.id.in_(list(document_ids)))
    if status is not None:
        statement = statement.where(Document.status == status)
    return list((await session.execute(statement.order_by(Document.created_at))).scalars())


def add(session: AsyncSession, row: Document | DocumentVersion) -> None:
    """A new document or version, written at the next flush."""
    session.add(row)


async def set_collection_entries_owner(
    session: AsyncSession, document_ids: Sequence[uuid.UUID], owner_id: uuid.UUID
) -> None:
    """Write the documents' new owner where collections list them."""
    await session.execute(
        update(CollectionDocument)
        .where(CollectionDocument.document_id.in_(list(document_ids)))
        .values(owner_id=owner_id)
    )


async def live_documents(session: AsyncSession) -> list[Document]:
    """Every document not deleted, of every owner (for `docchat reindex`)."""
    statement = select(Document).where(Document.deleted_at.is_(None))
    return list((await session.execute(statement)).scalars())


def _without_lexical_rows() -> ColumnElement[bool]:
    """Live, completed documents with chunks but not one row in `document_chunks`: read by a
    version older than the BM25 index (or their rows lost), so BM25 never finds them."""
    # A subquery with LIMIT is never turned into a join: each candidate costs one probe of
    # the rows' primary key, never a pass over every chunk of the installation (this runs at
    # each start, and in `/readyz` for administrators).
    first_row = (
        select(DocumentChunk.chunk_index)
        .where(DocumentChunk.document_id == Document.id)
        .limit(1)
        .scalar_subquery()
    )
    return and_(
        Document.deleted_at.is_(None),
        Document.status == DocumentStatus.completed,
        Document.chunk_count > 0,
        first_row.is_(None),
    )


async def count_without_lexical_rows(session: AsyncSession) -> int:
    """How many documents `without_lexical_rows` would list, all told."""
    statement = select(func.count()).select_from(Document).where(_without_lexical_rows())
    return int((await session.execute(statement)).scalar_one())


async def without_lexical_rows(
    session: AsyncSession, after: uuid.UUID | None, limit: int
) -> list[Document]:
    """Up to `limit` completed documents without BM25 rows, by id, after `after` (so a caller
    going through them all never meets one twice, whatever it did with the last)."""
    statement = select(Document).where(_without_lexical_rows())
    if after is not None:
        statement = statement.where(Document.id > after)
    statement = statement.order_by(Document.id).limit(limit)
    return list((await session.execute(statement)).scalars())


async def refresh_token_count(session: AsyncSession, document_id: uuid.UUID) -> None:
    """The document's word total (BM25's average length) from its rows, as they are now."""
    await session.execute(
        update(Document)
        .where(Document.id == document_id)
        .values(
            token_count=select(func.coalesce(func.sum(DocumentChunk.tokens), 0))
            .where(DocumentChunk.document_id == document_id)
            .scalar_subquery()
        )
    )


async def get_live(session: AsyncSession, document_id: uuid.UUID) -> Document | None:
    """A document by id regardless of reader, for the worker (which acts for its owner)."""
    statement = select(Document).where(Document.id == document_id, Document.deleted_at.is_(None))
    return (await session.execute(statement)).scalar_one_or_none()


async def live_by_id(
    session: AsyncSession, document_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Document]:
    """`get_live` for several documents at once: those not deleted, by id."""
    statement = select(Document).where(Document.id.in_(document_ids), Document.deleted_at.is_(None))
    return {document.id: document for document in (await session.execute(statement)).scalars()}


# -- written by the ingestion worker (inside its fenced transactions) ----------------------


async def set_extracted(
    session: AsyncSession,
    document_id: uuid.UUID,
    *,
    page_count: int,
    chunk_count: int,
    document_date: date | None = None,
) -> None:
    """The counts of a document read; its own date, when the file gave one (else the date it
    has stays: its source's, or none)."""
    values: dict[str, Any] = {
        "page_count": page_count,
        "pages_done": page_count,
        "chunk_count": chunk_count,
        "chunks_done": 0,
    }
    if document_date is not None:
        values["document_date"] = document_date
    await session.execute(update(Document).where(Document.id == document_id).values(**values))


async def set_waiting(session: AsyncSession, document_id: uuid.UUID, waiting: bool) -> None:
    """`queued` while the document waits for a worker, `processing` once one has it."""
    status = DocumentStatus.queued if waiting else DocumentStatus.processing
    await session.execute(
        update(Document)
        .where(
            Document.id == document_id,
            Document.status.in_([DocumentStatus.queued, DocumentStatus.processing]),
        )
        .values(status=status)
    )


async def set_progress(session: AsyncSession, document_id: uuid.UUID, chunks_done: int) -> None:
    await session.execute(
        update(Document).where(Document.id == document_id).values(chunks_done=chunks_done)
    )


async def mark_completed(session: AsyncSession, document_id: uuid.UUID, chunk_count: int) -> bool:
    """Completed, unless it was deleted meanwhile (then False and nothing changes)."""
    result = await session.execute(
        update(Document)
        .where(Document.id == document_id, Document.deleted_at.is_(None))
        .values(
            status=DocumentStatus.completed,
            error=None,
            chunk_count=chunk_count,
            chunks_done=chunk_count,
            token_count=select(func.coalesce(func.sum(DocumentChunk.tokens), 0))
            .where(DocumentChunk.document_id == document_id)
            .scalar_subquery(),
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def lock_live(session: AsyncSession, document_id: uuid.UUID) -> Document | None:
    """The live document, its row locked until the transaction ends."""
    statement = (
        select(Document)
        .where(Document.id == document_id, Document.deleted_at.is_(None))
        .with_for_update()
    )
    return (await session.execute(statement)).scalar_one_or_none()


# -- new versions ----------------------------------------------------------------------------

UNFINISHED = (DocumentStatus.queued, DocumentStatus.processing)


async def get_version(session: AsyncSession, version_id: uuid.UUID) -> DocumentVersion | None:
    return await session.get(DocumentVersion, version_id)


async def version_in_progress(
    session: AsyncSession, document_id: uuid.UUID
) -> DocumentVersion | None:
    statement = select(DocumentVersion).where(
        DocumentVersion.document_id == document_id, DocumentVersion.status.in_(UNFINISHED)
    )
    return (await session.execute(statement.limit(1))).scalar_one_or_none()


async def latest_unfinished_versions(
    session: AsyncSession, document_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, DocumentVersion]:
    """Per document, its latest new version when that one has not taken over (waiting, being
    read, or failed): what the document's owner should see of it."""
    if not document_ids:
        return {}
    statement = (
        select(DocumentVersion)
        .where(DocumentVersion.document_id.in_(list(document_ids)))
        .order_by(DocumentVersion.document_id, DocumentVersion.created_at.desc())
        .ext(distinct_on(DocumentVersion.document_id))
    )
    latest = (await session.execute(statement)).scalars()
    return {v.document_id: v for v in latest if v.status != DocumentStatus.completed}


async def drop_unfinished_versions(session: AsyncSession, document_id: uuid.UUID) -> list[str]:
    """Mark the document's waiting or running new versions failed (it is being deleted); the
    storage keys of their files."""
    result = await session.execute(
        update(DocumentVersion)
        .where(DocumentVersion.document_id == document_id, DocumentVersion.status.in_(UNFINISHED))
        .values(status=DocumentStatus.failed, error="The document was deleted")
        .returning(DocumentVersion.storage_key)
    )
    return list(result.scalars())


async def set_version_state(
    session: AsyncSession,
    version_id: uuid.UUID,
    status: DocumentStatus,
    *,
    error: str | None = None,
    chunk_count: int | None = None,
    chunks_done: int = 0,
) -> None:
    await session.execute(
        update(DocumentVersion)
        .where(DocumentVersion.id == version_id)
        .values(status=status, error=error, chunk_count=chunk_count, chunks_done=chunks_done)
    )


async def set_version_progress(
    session: AsyncSession, version_id: uuid.UUID, chunks_done: int
) -> None:
    await session.execute(
        update(DocumentVersion)
        .where(DocumentVersion.id == version_id)
        .values(chunks_done=chunks_done)
    )


async def adopt_version(
    session: AsyncSession,
    document: Document,
    version: DocumentVersion,
    page_count: int,
    document_date: date | None = None,
) -> None:
    """The document takes the new version's file and content (its chunks must be written in
    this transaction); the version is marked completed. Its date becomes the new file's own
    (`document_date`), else the one its source gave the version, else none."""
    chunk_count = version.chunk_count or 0
    await session.execute(
        update(Document)
        .where(Document.id == document.id)
        .values(
            version=version.number,
            versioned_at=utcnow(),
            filename=version.filename,
            content_type=version.content_type,
            size_bytes=version.size_bytes,
            sha256=version.sha256,
            storage_key=version.storage_key,
            page_count=page_count,
            pages_done=page_count,
            chunk_count=chunk_count,
            chunks_done=chunk_count,
            error=None,
            document_date=document_date or version.document_date,
            token_count=select(func.coalesce(func.sum(DocumentChunk.tokens), 0))
            .where(DocumentChunk.document_id == document.id)
            .scalar_subquery(),
        )
    )
    await set_version_state(
        session,
        version.id,
        DocumentStatus.completed,
        chunk_count=chunk_count,
        chunks_done=chunk_count,
    )


async def mark_failed(session: AsyncSession, document_id: uuid.UUID, error: str) -> None:
    await session.execute(
        update(Document)
        .where(Document.id == document_id)
        .values(status=DocumentStatus.failed, error=error)
    )


# -- files shared by documents -------------------------------------------------------------


async def lock_storage_key(session: AsyncSession, key: str) -> None:
    """Serialise uploads and removals of one stored file until the transaction ends."""
    await advisory_xact_lock(session, key)


async def storage_key_in_use(session: AsyncSession, key: str) -> bool:
    """A live document, or a new version still to be read, uses the stored file."""
    documents = select(Document.id).where(
        Document.storage_key == key, Document.deleted_at.is_(None)
    )
    versions = select(DocumentVersion.id).where(
        DocumentVersion.storage_key == key, DocumentVersion.status.in_(UNFINISHED)
    )
    for statement in (documents, versions):
        if (await session.execute(statement.limit(1))).first() is not None:
            return True
    return False


async def owned_documents(session: AsyncSession, owner_id: uuid.UUID) -> list[Document]:
    """The owner's live documents, oldest first (a person's data export)."""
    statement = (
        select(Document)
        .where(Document.owner_id == owner_id, Document.deleted_at.is_(None))
        .order_by(Document.created_at, Document.id)
    )
    return list((await session.execute(statement)).scalars())


async def storage_keys_of_owner(session: AsyncSession, owner_id: uuid.UUID) -> list[str]:
    """Every stored file the owner's documents (live or deleted) and their versions name."""
    documents = select(Document.storage_key).where(Document.owner_id == owner_id)
    versions = (
        select(DocumentVersion.storage_key)
        .join(Document, Document.id == DocumentVersion.document_id)
        .where(Document.owner_id == owner_id)
    )
    found = await session.execute(union(documents, versions))
    return sorted(str(key) for key in found.scalars())


async def storage_keys_in_use(connection: AsyncConnection) -> list[str]:
    """Every stored file a live document or an unfinished new version uses (what a backup
    copies; the same rule as `storage_key_in_use`)."""
    documents = select(Document.storage_key).where(Document.deleted_at.is_(None))
    versions = select(DocumentVersion.storage_key).where(DocumentVersion.status.in_(UNFINISHED))
    found = await connection.execute(union(documents, versions))
    return sorted(str(key) for key in found.scalars())


async def live_copy(
    session: AsyncSession, owner_id: uuid.UUID, sha256: str, visibility: Visibility
) -> Document | None:
    """The owner's live document with these bytes and visibility, if any (not a failed one:
    uploading the same file again is how people retry)."""
    statement = (
        select(Document)
        .where(
            Document.owner_id == owner_id,
            Document.sha256 == sha256,
            Document.visibility == visibility,
            Document.deleted_at.is_(None),
            Document.status != DocumentStatus.failed,
        )
        .order_by(Document.created_at)
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def lock_owner_storage(session: AsyncSession, owner_id: uuid.UUID) -> None:
    """Serialise the storage quota's check-and-add for one owner until the transaction ends."""
    await advisory_xact_lock(session, f"storage-quota:{owner_id}")


async def stored_bytes(session: AsyncSession, owner_id: uuid.UUID) -> int:
    """Size of the files of the owner's live documents (for the storage quota)."""
    statement = select(func.coalesce(func.sum(Document.size_bytes), 0)).where(
        Document.owner_id == owner_id, Document.deleted_at.is_(None)
    )
    return int((await session.execute(statement)).scalar_one())
