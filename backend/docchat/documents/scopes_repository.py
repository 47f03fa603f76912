"""The SQL of a question's scope (`documents.scopes`): the condition the indexes check, and
the statements that list a scope's documents, count its size and find its owners. Every
statement takes the parameters of `ScopeRule.parameters`."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import Document
from docchat.documents.repository import readable_condition

# A document of the scope, over `documents d`: live, completed, of the category if one is
# given, and the reader's own, shared with everyone, chosen, or in one of the collections.
_LIVE = """d.deleted_at IS NULL AND d.status = 'completed'
  AND (CAST(:scope_category AS uuid) IS NULL OR d.category_id = CAST(:scope_category AS uuid))"""
# Fragments are constants of this module; every value is a bound parameter.
IN_SCOPE = f"""({_LIVE}
  AND (d.owner_id = CAST(:scope_owner AS uuid)
       OR (CAST(:scope_everyone AS boolean) AND d.visibility = 'shared')
       OR d.id = ANY(CAST(:scope_documents AS uuid[]))
       OR EXISTS (SELECT 1 FROM collection_documents scd
                  JOIN collections sc ON sc.id = scd.collection_id AND sc.deleted_at IS NULL
                  WHERE scd.document_id = d.id
                    AND scd.collection_id = ANY(CAST(:scope_collections AS uuid[])))))"""  # noqa: S608

# The scope's documents, each part through its own index (an OR over them would read the
# whole table): the reader's, everyone's, the collections', the chosen ones.
_COLUMNS = "d.id, d.owner_id, d.version, d.created_at, d.chunk_count, d.token_count"
_OWN = f"""
SELECT {_COLUMNS}
FROM documents d WHERE d.owner_id = CAST(:scope_owner AS uuid) AND {_LIVE}"""  # noqa: S608
_EVERYONES = f"""
SELECT {_COLUMNS}
FROM documents d
WHERE CAST(:scope_everyone AS boolean) AND d.visibility = 'shared' AND {_LIVE}"""  # noqa: S608
_COLLECTIONS = f"""
SELECT {_COLUMNS}
FROM collection_documents cd
JOIN collections c ON c.id = cd.collection_id AND c.deleted_at IS NULL
JOIN documents d ON d.id = cd.document_id
WHERE cd.collection_id = ANY(CAST(:scope_collections AS uuid[])) AND {_LIVE}"""  # noqa: S608
_CHOSEN = f"""
SELECT {_COLUMNS}
FROM documents d WHERE d.id = ANY(CAST(:scope_documents AS uuid[])) AND {_LIVE}"""  # noqa: S608
_UNION = "\nUNION"
_NOT_EVERYONES = "NOT (CAST(:scope_everyone AS boolean) AND d.visibility = 'shared')"

# The first documents of the scope in upload order (one more than a listed scope may hold).
_FIRST = text(
    f"""
SELECT id, owner_id, version, chunk_count, token_count
FROM ({_UNION.join((_OWN, _EVERYONES, _COLLECTIONS, _CHOSEN))}) AS scope
ORDER BY created_at, id
LIMIT :listed
"""  # noqa: S608
)
# Size and totals of the documents shared with everyone (one count for every reader), and of
# the rest of a scope (what only its rule brings: the reader's own, the collections', the
# chosen documents, less those shared with everyone). The two never overlap. (The rest once
# had an everyone's part too, always empty, that PostgreSQL read through all of everyone's
# documents to find so: 16 ms a count behind 100,000 of them.)
_EVERYONES_TOTALS = text(
    f"""
SELECT count(*) AS documents, coalesce(sum(d.chunk_count), 0) AS chunks,
       coalesce(sum(d.token_count), 0) AS words
FROM documents d WHERE d.visibility = 'shared' AND {_LIVE}
"""  # noqa: S608
)
_RESTS_PARTS = (_OWN, _COLLECTIONS, _CHOSEN)
_RESTS_TOTALS = text(
    f"""
SELECT count(*) AS documents, coalesce(sum(chunk_count), 0) AS chunks,
       coalesce(sum(token_count), 0) AS words
FROM ({_UNION.join(f"{part} AND {_NOT_EVERYONES}" for part in _RESTS_PARTS)}) AS rest
"""  # noqa: S608
)

# The owners with at least one document in the scope, each found by an index walk that jumps
# from one owner to the next (a loose index scan): the cost is the number of owners, not of
# documents. Collections' documents carry their owner for this (migration 0018).
_OWNERS = text(
    f"""
WITH RECURSIVE everyone(owner_id) AS (
    SELECT (SELECT s.owner_id FROM documents s
            WHERE s.visibility = 'shared' AND s.status = 'completed' AND s.deleted_at IS NULL
              AND CAST(:scope_everyone AS boolean)
              AND (CAST(:scope_category AS uuid) IS NULL
                   OR s.category_id = CAST(:scope_category AS uuid))
            ORDER BY s.owner_id LIMIT 1)
    UNION ALL
    SELECT (SELECT s.owner_id FROM documents s
            WHERE s.visibility = 'shared' AND s.status = 'completed' AND s.deleted_at IS NULL
              AND s.owner_id > e.owner_id
              AND (CAST(:scope_category AS uuid) IS NULL
                   OR s.category_id = CAST(:scope_category AS uuid))
            ORDER BY s.owner_id LIMIT 1)
    FROM everyone e WHERE e.owner_id IS NOT NULL
),
members(collection_id, owner_id) AS (
    SELECT c.id,
           (SELECT cd.owner_id FROM collection_documents cd JOIN documents d
              ON d.id = cd.document_id
            WHERE cd.collection_id = c.id AND {_LIVE}
            ORDER BY cd.owner_id LIMIT 1)
    FROM collections c
    WHERE c.id = ANY(CAST(:scope_collections AS uuid[])) AND c.deleted_at IS NULL
    UNION ALL
    SELECT m.collection_id,
           (SELECT cd.owner_id FROM collection_documents cd JOIN documents d
              ON d.id = cd.document_id
            WHERE cd.collection_id = m.collection_id AND cd.owner_id > m.owner_id AND {_LIVE}
            ORDER BY cd.owner_id LIMIT 1)
    FROM members m WHERE m.owner_id IS NOT NULL
)
SELECT CAST(:scope_owner AS uuid) AS owner_id
WHERE EXISTS (SELECT 1 FROM documents d
              WHERE d.owner_id = CAST(:scope_owner AS uuid) AND {_LIVE})
UNION SELECT owner_id FROM everyone WHERE owner_id IS NOT NULL
UNION SELECT owner_id FROM members WHERE owner_id IS NOT NULL
UNION SELECT d.owner_id FROM documents d
      WHERE d.id = ANY(CAST(:scope_documents AS uuid[])) AND {_LIVE}
"""  # noqa: S608
)


async def owners(session: AsyncSession, parameters: dict[str, Any]) -> Sequence[uuid.UUID]:
    """The owners with at least one document in the scope."""
    return (await session.execute(_OWNERS, parameters)).scalars().all()


async def first_documents(
    session: AsyncSession, parameters: dict[str, Any], limit: int
) -> Sequence[Row[Any]]:
    """The scope's first `limit` documents in upload order: id, owner_id, version,
    chunk_count, token_count."""
    return (await session.execute(_FIRST, parameters | {"listed": limit})).all()


async def rests_totals(session: AsyncSession, parameters: dict[str, Any]) -> Row[Any]:
    """Documents, chunks and words of the scope less the documents shared with everyone."""
    return (await session.execute(_RESTS_TOTALS, parameters)).one()


async def everyones_totals(session: AsyncSession, parameters: dict[str, Any]) -> Row[Any]:
    """Documents, chunks and words of the documents shared with everyone (of the category)."""
    return (await session.execute(_EVERYONES_TOTALS, parameters)).one()


async def readable_ids(
    session: AsyncSession, user_id: uuid.UUID, among: Sequence[uuid.UUID]
) -> Sequence[uuid.UUID]:
    """The documents of `among` the user may read."""
    readable = select(Document.id).where(readable_condition(user_id), Document.id.in_(list(among)))
    return (await session.execute(readable)).scalars().all()
