"""The scope of a search, resolved for one question: which completed documents it may read.

What a user may read is a predicate, not a list: their own documents, those shared with
everyone, and those of the collections they belong to (directly or through a group). A
message's scope is resolved here at every question, in O(memberships + owners), never in
O(documents):

- the rule: the reader, whether their own and everyone's documents count, the collections
  (memberships are read afresh, so a revoked share counts at the very next question), the
  documents chosen for the message or the chat (only those still readable), a category;
- the owners whose vector collections may hold the scope's chunks (an index walk per owner,
  `_OWNERS`), which also tells an empty scope from one that is not;
- its size and totals (chunks, average length; BM25's formula needs them), counted when first
  asked and then reused for `TOTALS_TTL_SECONDS`: a document more or less barely moves them.

A scope of at most `LISTED_UP_TO` documents is listed as well (each with its answering
version), and searched as a list, exactly; a wider one is a condition (`IN_SCOPE`) that
PostgreSQL checks on what the indexes find (`retrieval.index.DocumentScope`).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import Document
from docchat.documents.repository import readable_condition
from docchat.membership.access import member_collection_ids
from docchat.membership.models import EVERYONE_ID
from docchat.retrieval.index import DocumentRef, DocumentScope, ScopeCondition
from docchat.users.models import User

# Up to this many documents a scope is listed and searched as a list; above, as a condition.
LISTED_UP_TO = 1_000
# How long a wide scope's size and totals are reused before they are counted again.
TOTALS_TTL_SECONDS = 30.0
# Wide scopes whose totals are kept, at most (the oldest goes first).
KEPT_SCOPES = 1024

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
_SCOPE_DOCUMENTS = f"""
SELECT d.id, d.owner_id, d.version, d.created_at, d.chunk_count, d.token_count
FROM documents d
WHERE d.id IN (
    SELECT o.id FROM documents o WHERE o.owner_id = CAST(:scope_owner AS uuid)
    UNION ALL
    SELECT s.id FROM documents s
    WHERE CAST(:scope_everyone AS boolean) AND s.visibility = 'shared'
      AND s.status = 'completed' AND s.deleted_at IS NULL
    UNION ALL
    SELECT cd.document_id FROM collection_documents cd
    JOIN collections c ON c.id = cd.collection_id AND c.deleted_at IS NULL
    WHERE cd.collection_id = ANY(CAST(:scope_collections AS uuid[]))
    UNION ALL
    SELECT unnest(CAST(:scope_documents AS uuid[]))
) AND {IN_SCOPE}
"""  # noqa: S608

# Its size and totals, and its documents in upload order when there are few.
_COUNT = text(
    f"""
WITH scope AS ({_SCOPE_DOCUMENTS}),
first AS (SELECT * FROM scope ORDER BY created_at, id LIMIT :listed + 1)
SELECT (SELECT count(*) FROM scope) AS documents,
       (SELECT coalesce(sum(chunk_count), 0) FROM scope) AS chunks,
       (SELECT coalesce(sum(token_count), 0) FROM scope) AS words,
       (SELECT array_agg(id ORDER BY created_at, id) FROM first) AS ids,
       (SELECT array_agg(owner_id ORDER BY created_at, id) FROM first) AS owners,
       (SELECT array_agg(version ORDER BY created_at, id) FROM first) AS versions
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


@dataclass(frozen=True)
class ScopeRule:
    """Whose documents a scope holds; every part must be readable by `reader` (the caller
    resolved the collections and documents as such)."""

    reader: uuid.UUID
    own: bool = False
    everyone: bool = False
    collections: tuple[uuid.UUID, ...] = ()
    documents: tuple[uuid.UUID, ...] = ()
    category_id: uuid.UUID | None = None

    def parameters(self) -> dict[str, Any]:
        return {
            "scope_owner": self.reader if self.own else None,
            "scope_everyone": self.everyone,
            "scope_collections": list(self.collections),
            "scope_documents": list(self.documents),
            "scope_category": self.category_id,
        }


@dataclass(frozen=True)
class _Counted:
    documents: int
    chunks: float
    average_words: float
    read_at: float


_wide: OrderedDict[ScopeRule, _Counted] = OrderedDict()


async def search_scope(
    session: AsyncSession,
    user: User,
    *,
    among: Sequence[uuid.UUID] | None = None,
    collections: Sequence[uuid.UUID] | None = None,
    category_id: uuid.UUID | None = None,
) -> DocumentScope:
    """The completed documents `user` may read (all, or those of `among` and of `collections`,
    or of a category), as the indexes search them. `collections` must be ones the user may
    read (`sharing.service.require_readable`)."""
    rule = await _rule(session, user, among, collections, category_id)
    return await resolve(session, rule)


async def resolve(session: AsyncSession, rule: ScopeRule) -> DocumentScope:
    parameters = rule.parameters()
    counted = _wide.get(rule)
    if counted is None or time.monotonic() - counted.read_at > TOTALS_TTL_SECONDS:
        row = (await session.execute(_COUNT, parameters | {"listed": LISTED_UP_TO})).one()
        if row.documents <= LISTED_UP_TO:
            _wide.pop(rule, None)
            refs = map(DocumentRef, row.ids or [], row.owners or [], row.versions or [])
            return DocumentScope(refs, totals=_totals(row.chunks, row.words))
        counted = _Counted(row.documents, *_totals(row.chunks, row.words), time.monotonic())
        _keep(rule, counted)
    owners = (await session.execute(_OWNERS, parameters)).scalars().all()
    return DocumentScope(
        None,
        condition=ScopeCondition(IN_SCOPE, parameters),
        owners=owners,
        size=counted.documents,
        totals=(counted.chunks, counted.average_words),
    )


def _totals(chunks: float, words: float) -> tuple[float, float]:
    return float(chunks), float(words) / chunks if chunks else 1.0


def _keep(rule: ScopeRule, counted: _Counted) -> None:
    _wide[rule] = counted
    _wide.move_to_end(rule)
    while len(_wide) > KEPT_SCOPES:
        _wide.popitem(last=False)


async def _rule(
    session: AsyncSession,
    user: User,
    among: Sequence[uuid.UUID] | None,
    collections: Sequence[uuid.UUID] | None,
    category_id: uuid.UUID | None,
) -> ScopeRule:
    if among is None and collections is None:
        if category_id is not None:  # a category holds its owner's documents only
            return ScopeRule(user.id, own=True, category_id=category_id)
        member_of = (await session.execute(member_collection_ids(user.id))).scalars().all()
        return ScopeRule(user.id, own=True, everyone=True, collections=_sorted(member_of))
    chosen: Sequence[uuid.UUID] = ()
    if among:
        readable = select(Document.id).where(
            readable_condition(user.id), Document.id.in_(list(among))
        )
        chosen = (await session.execute(readable)).scalars().all()
    named = list(collections or [])
    return ScopeRule(
        user.id,
        everyone=EVERYONE_ID in named,
        collections=_sorted(c for c in named if c != EVERYONE_ID),
        documents=_sorted(chosen),
        category_id=category_id,
    )


def _sorted(ids: Any) -> tuple[uuid.UUID, ...]:
    """Ids in a canonical order, so that equal rules are one cache key."""
    return tuple(sorted(set(ids)))
