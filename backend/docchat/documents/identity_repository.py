"""The SQL of passages' identities (`documents.passage_identity`): the dates of documents
and the collections a reader sees them in, for the headers an answer's passages carry."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, Select, Uuid, any_, bindparam, case, func, select
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import Document, Visibility
from docchat.membership.access import member_collection_ids
from docchat.membership.models import EVERYONE_ID, Collection, CollectionDocument


@functools.cache
def _identities() -> Select[Any]:
    """Each live document of `:documents` with its own date, when its current content was
    uploaded, the names of the live collections holding it that `:reader` belongs to
    (directly or through a group), and "Everyone"'s name when it is shared with everyone.
    Built once: every answer asks."""
    reader = bindparam("reader", type_=Uuid())
    documents = bindparam("documents", type_=ARRAY(Uuid()))
    collections = (
        select(func.array_agg(aggregate_order_by(Collection.name, Collection.name)))
        .select_from(CollectionDocument)
        .join(Collection, Collection.id == CollectionDocument.collection_id)
        .where(
            CollectionDocument.document_id == Document.id,
            Collection.deleted_at.is_(None),
            CollectionDocument.collection_id.in_(member_collection_ids(reader)),
        )
        .scalar_subquery()
    )
    everyone = (
        select(Collection.name)
        .where(Collection.id == EVERYONE_ID, Collection.deleted_at.is_(None))
        .scalar_subquery()
    )
    return select(
        Document.id,
        Document.document_date,
        func.coalesce(Document.versioned_at, Document.created_at).label("uploaded_at"),
        collections.label("collections"),
        case((Document.visibility == Visibility.shared, everyone)).label("everyone"),
    ).where(Document.id == any_(documents), Document.deleted_at.is_(None))


async def identities_of(
    session: AsyncSession, document_ids: Sequence[uuid.UUID], reader: uuid.UUID | None
) -> Sequence[Row[Any]]:
    """id, document_date, uploaded_at, collections (names, or null) and everyone (a name, or
    null) of the live documents among `document_ids`, in one statement."""
    parameters = {"documents": list(document_ids), "reader": reader}
    rows: Sequence[Row[Any]] = (await session.execute(_identities(), parameters)).all()
    return rows
