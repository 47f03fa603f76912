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
  asked and then reused for `TOTALS_TTL_SECONDS` (a document more or less barely moves them):
  the documents shared with everyone once for every reader, the rest per rule.

A scope of at most `LISTED_UP_TO` documents and `LISTED_CHUNKS_UP_TO` chunks is listed as
well (each document with its answering version), read afresh at every question and searched
as a list, exactly; a wider one is a condition (`IN_SCOPE`) that PostgreSQL checks on what the
indexes find (`retrieval.index.DocumentScope`).
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
from docchat.membership.access import collection_ids_of
from docchat.membership.models import EVERYONE_ID
from docchat.retrieval.index import DocumentRef, DocumentScope, ScopeCondition
from docchat.retrieval.lexical import EXACT_SCOPE_CHUNKS
from docchat.users.models import User

# Up to this many documents and chunks a scope is listed and searched as a list (BM25 then
# reads its chunks by key, exactly); above, as a condition.
LISTED_UP_TO = 1_000
LISTED_CHUNKS_UP_TO = EXACT_SCOPE_CHUNKS
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
    documents: int = 0
    chunks: float = 0.0
    words: float = 0.0
    read_at: float = 0.0

    def __add__(self, other: _Counted) -> _Counted:
        return _Counted(
            self.documents + other.documents,
            self.chunks + other.chunks,
            self.words + other.words,
            min(self.read_at, other.read_at),
        )

    @property
    def totals(self) -> tuple[float, float]:
        return self.chunks, self.words / self.chunks if self.chunks else 1.0


# Sizes counted lately: everyone's documents (by category), and the rest of each rule.
_everyones: dict[uuid.UUID | None, _Counted] = {}
_rests: OrderedDict[ScopeRule, _Counted] = OrderedDict()


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
    """The scope of `rule`: listed when it was small when last counted (and still is), else a
    condition with the owners it reaches and its size as last counted."""
    parameters = rule.parameters()
    counted = await _size(session, rule, parameters)
    if _listable(counted):
        listed = await _listed(session, parameters)
        if listed is not None:
            return listed
    owners = (await session.execute(_OWNERS, parameters)).scalars().all()
    return DocumentScope(
        None,
        condition=ScopeCondition(IN_SCOPE, parameters),
        owners=owners,
        size=counted.documents,
        totals=counted.totals,
    )


def _listable(counted: _Counted) -> bool:
    return counted.documents <= LISTED_UP_TO and counted.chunks <= LISTED_CHUNKS_UP_TO


async def _listed(session: AsyncSession, parameters: dict[str, Any]) -> DocumentScope | None:
    """The scope's documents with their versions and exact totals; None when it has grown
    past what a listed scope may hold."""
    rows = (await session.execute(_FIRST, parameters | {"listed": LISTED_UP_TO + 1})).all()
    counted = _Counted(
        len(rows),
        float(sum(row.chunk_count or 0 for row in rows)),
        float(sum(row.token_count or 0 for row in rows)),
    )
    if not _listable(counted):
        return None
    refs = (DocumentRef(row.id, row.owner_id, row.version) for row in rows)
    return DocumentScope(refs, totals=counted.totals)


async def _size(session: AsyncSession, rule: ScopeRule, parameters: dict[str, Any]) -> _Counted:
    """The scope's size and totals as counted within `TOTALS_TTL_SECONDS`: everyone's
    documents once for every reader, the rest per rule."""
    now = time.monotonic()
    rest = _rests.get(rule)
    if rest is None or now - rest.read_at > TOTALS_TTL_SECONDS:
        rest = _counted((await session.execute(_RESTS_TOTALS, parameters)).one(), now)
        _rests[rule] = rest
        _rests.move_to_end(rule)
        while len(_rests) > KEPT_SCOPES:
            _rests.popitem(last=False)
    if not rule.everyone:
        return rest
    everyones = _everyones.get(rule.category_id)
    if everyones is None or now - everyones.read_at > TOTALS_TTL_SECONDS:
        row = (await session.execute(_EVERYONES_TOTALS, parameters)).one()
        everyones = _everyones[rule.category_id] = _counted(row, now)
    return rest + everyones


def _counted(row: Any, now: float) -> _Counted:
    return _Counted(int(row.documents), float(row.chunks), float(row.words), now)


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
        member_of = await collection_ids_of(session, user.id)
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
