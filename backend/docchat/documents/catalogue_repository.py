"""The SQL of the catalogue (`documents.catalogue`): a scope's documents narrowed by filters
on their name, kind, date, collection and language, listed or counted.

Every statement is a condition over `documents d`: the scope's own (a wide scope's
`ScopeCondition`, or the listed scope's ids) and the filters' fragments, which are constants
of this module; every value is a bound parameter named `scope_*` (a narrowed wide scope hands
the same condition on to the indexes).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.kit.matching import containing, contains
from docchat.membership.access import member_collection_ids
from docchat.membership.models import EVERYONE_ID, Collection

LISTED_CONDITION = """(d.id = ANY(CAST(:scope_listed AS uuid[]))
  AND d.deleted_at IS NULL AND d.status = 'completed')"""
NAME = "d.filename ILIKE :scope_f_name ESCAPE '\\'"
KINDS = "d.content_type = ANY(CAST(:scope_f_kinds AS text[]))"
_DAY = "COALESCE(d.document_date, CAST(COALESCE(d.versioned_at, d.created_at) AS date))"
DATE_FROM = f"{_DAY} >= CAST(:scope_f_from AS date)"
DATE_TO = f"{_DAY} <= CAST(:scope_f_to AS date)"
YEARS = f"""(CAST(EXTRACT(YEAR FROM {_DAY}) AS int) = ANY(CAST(:scope_f_years AS int[]))
     OR d.filename ~ :scope_f_years_in_name)"""
COLLECTION = """(EXISTS (SELECT 1 FROM collection_documents fcd
                 WHERE fcd.document_id = d.id
                   AND fcd.collection_id = ANY(CAST(:scope_f_collections AS uuid[])))
     OR (CAST(:scope_f_everyone AS boolean) AND d.visibility = 'shared'))"""
LANGUAGE = """EXISTS (SELECT 1 FROM document_chunks fch
              WHERE fch.document_id = d.id AND fch.language_code = :scope_f_language)"""

_LISTING_COLUMNS = """d.id, d.owner_id, d.version, d.filename, d.content_type, d.document_date,
  COALESCE(d.versioned_at, d.created_at) AS uploaded_at, d.size_bytes, d.page_count,
  d.chunk_count"""


async def collections_named(
    session: AsyncSession, name: str, reader: uuid.UUID | None
) -> tuple[list[uuid.UUID], bool]:
    """The live collections `reader` belongs to whose name holds `name` (case ignored), and
    whether "Everyone"'s does."""
    if reader is None:
        return [], False
    statement = select(Collection.id).where(
        Collection.deleted_at.is_(None),
        contains(Collection.name, name),
        (Collection.id == EVERYONE_ID) | Collection.id.in_(member_collection_ids(reader)),
    )
    found = list((await session.scalars(statement)).all())
    return [c for c in found if c != EVERYONE_ID], EVERYONE_ID in found


async def listing(
    session: AsyncSession, condition: str, parameters: dict[str, Any], limit: int
) -> Sequence[Row[Any]]:
    """The first `limit` documents of `condition`, newest first (their own date, else their
    upload), then by name."""
    statement = text(
        f"""SELECT {_LISTING_COLUMNS} FROM documents d WHERE {condition}
ORDER BY COALESCE(d.document_date, CAST(COALESCE(d.versioned_at, d.created_at) AS date)) DESC,
  d.filename, d.id
LIMIT :scope_f_limit"""  # noqa: S608 - constant fragments, bound values
    )
    return (await session.execute(statement, {**parameters, "scope_f_limit": limit})).all()


async def count(session: AsyncSession, condition: str, parameters: dict[str, Any]) -> int:
    statement = text(f"SELECT count(*) FROM documents d WHERE {condition}")  # noqa: S608
    return int((await session.execute(statement, parameters)).scalar_one())


async def names_like(
    session: AsyncSession, condition: str, parameters: dict[str, Any], words: list[str], limit: int
) -> Sequence[Row[Any]]:
    """id, owner_id, version and filename of up to `limit` documents of `condition` whose name
    holds one of `words` (case ignored)."""
    statement = text(
        f"SELECT d.id, d.owner_id, d.version, d.filename FROM documents d WHERE {condition} "  # noqa: S608
        # LIKE's default escape is the backslash, which `containing` escapes with.
        "AND d.filename ILIKE ANY(CAST(:scope_f_words AS text[])) "
        "ORDER BY d.created_at, d.id LIMIT :scope_f_limit"
    )
    patterns = [containing(word) for word in words]
    values = {**parameters, "scope_f_words": patterns, "scope_f_limit": limit}
    return (await session.execute(statement, values)).all()


async def refs(
    session: AsyncSession, condition: str, parameters: dict[str, Any], limit: int
) -> Sequence[Row[Any]]:
    """id, owner_id and version of up to `limit` documents of `condition`."""
    statement = text(
        f"SELECT d.id, d.owner_id, d.version FROM documents d WHERE {condition} "  # noqa: S608
        "ORDER BY d.created_at, d.id LIMIT :scope_f_limit"
    )
    return (await session.execute(statement, {**parameters, "scope_f_limit": limit})).all()
