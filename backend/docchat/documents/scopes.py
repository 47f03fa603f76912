"""The scope of a search, resolved for one question: which completed documents it may read.

What a user may read is a predicate, not a list: their own documents, those shared with
everyone, and those of the collections they belong to (directly or through a group). A
message's scope is resolved here at every question, in O(memberships + owners), never in
O(documents):

- the rule: the reader, whether their own and everyone's documents count, the collections
  (memberships are read afresh, so a revoked share counts at the very next question), the
  documents chosen for the message or the chat (only those still readable), a category;
- the owners whose vector collections may hold the scope's chunks (an index walk per owner,
  `scopes_repository`), which also tells an empty scope from one that is not;
- its size and totals (chunks, average length; BM25's formula needs them), counted when first
  asked and then reused for `TOTALS_TTL_SECONDS` (a document more or less barely moves them):
  the documents shared with everyone once for every reader, the rest per rule.

A scope of at most `LISTED_UP_TO` documents and `LISTED_CHUNKS_UP_TO` chunks is listed as
well (each document with its answering version), read afresh at every question and searched
as a list, exactly; a wider one is a condition (`scopes_repository.IN_SCOPE`) that PostgreSQL
checks on what the indexes find (`retrieval.index.DocumentScope`). The SQL is in
`scopes_repository.py`.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import scopes_repository
from docchat.membership.models import EVERYONE_ID
from docchat.membership.repository import collection_ids_of
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
    owners = await scopes_repository.owners(session, parameters)
    return DocumentScope(
        None,
        condition=ScopeCondition(scopes_repository.IN_SCOPE, parameters),
        owners=owners,
        size=counted.documents,
        totals=counted.totals,
    )


def _listable(counted: _Counted) -> bool:
    return counted.documents <= LISTED_UP_TO and counted.chunks <= LISTED_CHUNKS_UP_TO


async def _listed(session: AsyncSession, parameters: dict[str, Any]) -> DocumentScope | None:
    """The scope's documents with their versions and exact totals; None when it has grown
    past what a listed scope may hold."""
    rows = await scopes_repository.first_documents(session, parameters, LISTED_UP_TO + 1)
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
        rest = _counted(await scopes_repository.rests_totals(session, parameters), now)
        _rests[rule] = rest
        _rests.move_to_end(rule)
        while len(_rests) > KEPT_SCOPES:
            _rests.popitem(last=False)
    if not rule.everyone:
        return rest
    everyones = _everyones.get(rule.category_id)
    if everyones is None or now - everyones.read_at > TOTALS_TTL_SECONDS:
        row = await scopes_repository.everyones_totals(session, parameters)
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
        chosen = await scopes_repository.readable_ids(session, user.id, among)
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
