"""All SQL for sources: their rows and claims (the sync's lease), the items a sync left, and
the links between a source's documents and its collection."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.documents.models import Document
from docchat.membership.models import CollectionDocument
from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceItem as ItemRow
from docchat.sources.models import SourceState
from docchat.users.models import User

# Rows a statement writes at once (a statement takes at most 32,767 parameters).
BATCH = 5000

# A due source, or one whose worker stopped beating (it died): claimed by one worker alone.
_CLAIM = text(
    """
UPDATE sources s SET claim_token = :token, heartbeat_at = :now,
    state = CASE WHEN s.state = 'removing' THEN 'removing' ELSE 'syncing' END,
    last_started_at = CASE WHEN s.state = 'syncing' THEN s.last_started_at ELSE :now END,
    progress = CASE WHEN s.state = 'syncing' THEN s.progress ELSE '{}'::jsonb END
WHERE s.id = (
    SELECT c.id FROM sources c
    JOIN collections col ON col.id = c.collection_id AND col.deleted_at IS NULL
    JOIN users u ON u.id = c.owner_id AND u.is_active
    WHERE ((c.state IN ('idle', 'failing', 'removing') AND c.next_sync_at <= :now
            AND c.claim_token IS NULL)
        OR (c.state IN ('syncing', 'removing') AND c.claim_token IS NOT NULL
            AND c.heartbeat_at < :stale_before))
      -- Its owner still owns the collection (directly or through a group), or it is
      -- being removed: nobody brings files into a collection they no longer own.
      AND (c.state = 'removing' OR EXISTS (
        SELECT 1 FROM collection_members m
        WHERE m.collection_id = c.collection_id AND m.role = 'owner'
          AND m.accepted_at IS NOT NULL
          AND (m.user_id = c.owner_id OR m.group_id IN (
                SELECT g.group_id FROM group_members g WHERE g.user_id = c.owner_id))))
    ORDER BY c.next_sync_at NULLS FIRST
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED
)
RETURNING s.id
"""
)


# -- the sources ---------------------------------------------------------------------------


async def get(session: AsyncSession, source_id: uuid.UUID) -> SourceRow | None:
    return await session.get(SourceRow, source_id)


def add(session: AsyncSession, row: SourceRow) -> None:
    session.add(row)


async def delete_row(session: AsyncSession, row: SourceRow) -> None:
    await session.delete(row)


async def lock(session: AsyncSession, row: SourceRow, *, deleting: bool) -> None:
    """Lock the row for a change (FOR NO KEY UPDATE), or for its deletion (FOR UPDATE)."""
    await session.refresh(row, with_for_update={"key_share": not deleting})


async def in_collection(session: AsyncSession, collection_id: uuid.UUID) -> Sequence[SourceRow]:
    """The collection's sources but those being removed, oldest first."""
    statement = (
        select(SourceRow)
        .where(SourceRow.collection_id == collection_id, SourceRow.state != SourceState.removing)
        .order_by(SourceRow.created_at, SourceRow.id)
    )
    return (await session.execute(statement)).scalars().all()


def items_statement(source_id: uuid.UUID, failed: bool | None) -> Select[ItemRow]:
    """A source's items by key (only the failed ones, or only the others, when asked)."""
    statement = select(ItemRow).where(ItemRow.source_id == source_id)
    if failed is not None:
        statement = statement.where(
            ItemRow.error.is_not(None) if failed else ItemRow.error.is_(None)
        )
    return statement.order_by(ItemRow.key)


async def owner(session: AsyncSession, user_id: uuid.UUID) -> User:
    user = await session.get(User, user_id)
    assert user is not None  # a source goes with its owner's account
    return user


# -- the claim (a sync's lease) --------------------------------------------------------------


async def claim_due(
    session: AsyncSession, token: uuid.UUID, now: datetime, stale_before: datetime
) -> SourceRow | None:
    """Claim (with `token`) the next due source, or one whose worker stopped beating."""
    claimed = await session.execute(
        _CLAIM, {"token": token, "now": now, "stale_before": stale_before}
    )
    source_id = claimed.scalar_one_or_none()
    if source_id is None:
        return None
    row = await session.get(SourceRow, source_id)
    assert row is not None
    return row


async def hold(session: AsyncSession, source_id: uuid.UUID, token: uuid.UUID) -> SourceRow | None:
    """The source's row, locked, if `token` still holds it."""
    # FOR KEY SHARE: the row cannot be deleted (nor the account that owns it) while a file
    # is written, but pausing or "Sync now" need not wait for the file: they take the
    # claim away, and the next step sees that.
    statement = (
        select(SourceRow)
        .where(SourceRow.id == source_id, SourceRow.claim_token == token)
        .with_for_update(read=True, key_share=True)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def beat(
    session: AsyncSession, source_id: uuid.UUID, token: uuid.UUID, now: datetime
) -> bool:
    """Record that the claim's holder is alive; False when the claim is no longer its own."""
    result = await session.execute(
        update(SourceRow)
        .where(SourceRow.id == source_id, SourceRow.claim_token == token)
        .values(heartbeat_at=now)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def set_progress(
    session: AsyncSession, source_id: uuid.UUID, token: uuid.UUID, progress: dict[str, int]
) -> None:
    await session.execute(
        update(SourceRow)
        .where(SourceRow.id == source_id, SourceRow.claim_token == token)
        .values(progress=progress)
    )


async def remove(session: AsyncSession, source_id: uuid.UUID) -> None:
    await session.execute(delete(SourceRow).where(SourceRow.id == source_id))


async def retry_removal(session: AsyncSession, source_id: uuid.UUID, at: datetime) -> None:
    """Unclaim a source being removed, to be taken again at `at`."""
    await session.execute(
        update(SourceRow).where(SourceRow.id == source_id).values(claim_token=None, next_sync_at=at)
    )


# -- its items ---------------------------------------------------------------------------------


async def has_items(session: AsyncSession, source_id: uuid.UUID) -> bool:
    statement = select(ItemRow.id).where(ItemRow.source_id == source_id).limit(1)
    return (await session.execute(statement)).first() is not None


async def items_of(session: AsyncSession, source_id: uuid.UUID) -> list[ItemRow]:
    statement = select(ItemRow).where(ItemRow.source_id == source_id)
    return list((await session.execute(statement)).scalars())


async def save_item(
    session: AsyncSession,
    source_id: uuid.UUID,
    key: str,
    document_id: uuid.UUID | None,
    *,
    version: str,
    error: str | None,
) -> None:
    values: dict[str, Any] = {
        "version": version,
        "document_id": document_id,
        "error": error,
        "synced_at": utcnow(),
    }
    await session.execute(
        insert(ItemRow)
        .values(id=uuid.uuid4(), source_id=source_id, key=key, **values)
        .on_conflict_do_update(index_elements=["source_id", "key"], set_=values)
    )


async def set_item_error(session: AsyncSession, item_id: uuid.UUID, error: str) -> None:
    await session.execute(update(ItemRow).where(ItemRow.id == item_id).values(error=error))


async def delete_item(session: AsyncSession, item_id: uuid.UUID) -> None:
    await session.execute(delete(ItemRow).where(ItemRow.id == item_id))


# -- its documents -----------------------------------------------------------------------------


async def live_document(session: AsyncSession, document_id: uuid.UUID | None) -> Document | None:
    if document_id is None:
        return None
    document = await session.get(Document, document_id)
    return document if document is not None and document.deleted_at is None else None


async def live_documents(session: AsyncSession, source_id: uuid.UUID) -> set[uuid.UUID | None]:
    """The source's items' documents that are not deleted (a join: a source may hold tens of
    thousands, more than a statement's parameters)."""
    statement = (
        select(ItemRow.document_id)
        .join(Document, Document.id == ItemRow.document_id)
        .where(ItemRow.source_id == source_id, Document.deleted_at.is_(None))
    )
    return set((await session.execute(statement)).scalars())


async def linked_documents(
    session: AsyncSession, source_id: uuid.UUID, collection_id: uuid.UUID
) -> set[uuid.UUID | None]:
    """The source's items' documents that its collection holds."""
    statement = (
        select(ItemRow.document_id)
        .join(
            CollectionDocument,
            (CollectionDocument.document_id == ItemRow.document_id)
            & (CollectionDocument.collection_id == collection_id),
        )
        .where(ItemRow.source_id == source_id)
    )
    return set((await session.execute(statement)).scalars())


async def link_documents(
    session: AsyncSession,
    collection_id: uuid.UUID,
    owner_id: uuid.UUID,
    document_ids: Sequence[uuid.UUID],
) -> None:
    """Put the documents in the collection (those already there stay as they are)."""
    for start in range(0, len(document_ids), BATCH):
        rows = [
            {"collection_id": collection_id, "document_id": document_id, "owner_id": owner_id}
            for document_id in document_ids[start : start + BATCH]
        ]
        await session.execute(insert(CollectionDocument).values(rows).on_conflict_do_nothing())
