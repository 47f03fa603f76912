"""`retrieval.filters.DocumentCatalogue` over PostgreSQL: a scope's documents narrowed by
filters, listed for research mode's `list_documents` tool or made the scope a question
searches. Each call reads in a short session of its own; the filters are conditions added to
the scope's, so a filter never reaches past what the asker may read."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import catalogue_repository as sql
from docchat.documents.scopes import LISTED_UP_TO
from docchat.extraction.kinds import FileKind
from docchat.kit.matching import containing
from docchat.replicas.routing import Sessions, replica_read
from docchat.retrieval.filters import CatalogueEntry, DocumentFilters, Listing
from docchat.retrieval.index import DocumentRef, DocumentScope, ScopeCondition, SearchScope
from docchat.retrieval.named_in_question import names, question_words

# The documents whose names share a word with a question that are compared with it in full.
NAMES_COMPARED = 500


def _kind(content_type: str) -> FileKind | None:
    try:
        return FileKind(content_type)
    except ValueError:
        return None


def _entry(row: Any) -> CatalogueEntry:
    uploaded: dt.datetime | None = row.uploaded_at
    return CatalogueEntry(
        ref=DocumentRef(row.id, row.owner_id, row.version),
        filename=row.filename,
        kind=_kind(row.content_type),
        document_date=row.document_date,
        uploaded=uploaded.astimezone(dt.UTC).date() if uploaded is not None else None,
        size_bytes=row.size_bytes,
        pages=row.page_count,
        passages=row.chunk_count,
    )


@dataclass
class StoredCatalogue:
    sessionmaker: Sessions  # a question's reads may run on a replica

    async def _condition(
        self,
        session: AsyncSession,
        documents: SearchScope,
        filters: DocumentFilters,
        reader: uuid.UUID | None,
    ) -> tuple[str, dict[str, Any]]:
        """The scope's condition with the filters' (SQL fragments of the repository)."""
        scope = DocumentScope.of(documents)
        parts: list[str]
        parameters: dict[str, Any]
        if scope.condition is not None:
            parts, parameters = [f"({scope.condition.sql})"], dict(scope.condition.parameters)
        else:
            parts, parameters = [sql.LISTED_CONDITION], {"scope_listed": scope.ids}
        if filters.name:
            parts.append(sql.NAME)
            parameters["scope_f_name"] = containing(filters.name)
        if filters.kinds:
            parts.append(sql.KINDS)
            parameters["scope_f_kinds"] = [kind.value for kind in filters.kinds]
        if filters.date_from:
            parts.append(sql.DATE_FROM)
            parameters["scope_f_from"] = filters.date_from
        if filters.date_to:
            parts.append(sql.DATE_TO)
            parameters["scope_f_to"] = filters.date_to
        if filters.years:
            parts.append(sql.YEARS)
            parameters["scope_f_years"] = list(filters.years)
            alternatives = "|".join(str(year) for year in filters.years)
            parameters["scope_f_years_in_name"] = f"(^|[^0-9])({alternatives})([^0-9]|$)"
        if filters.collection:
            collections, everyone = await sql.collections_named(session, filters.collection, reader)
            parts.append(sql.COLLECTION)
            parameters["scope_f_collections"] = collections
            parameters["scope_f_everyone"] = everyone
        if filters.language:
            parts.append(sql.LANGUAGE)
            parameters["scope_f_language"] = filters.language
        return " AND ".join(parts), parameters

    @replica_read
    async def listing(
        self,
        documents: SearchScope,
        filters: DocumentFilters,
        reader: uuid.UUID | None,
        limit: int,
    ) -> Listing:
        if not documents:
            return Listing([], 0)
        async with self.sessionmaker() as session:
            condition, parameters = await self._condition(session, documents, filters, reader)
            rows = await sql.listing(session, condition, parameters, limit)
            total = len(rows)
            if total >= limit:
                total = await sql.count(session, condition, parameters)
        return Listing([_entry(row) for row in rows], total)

    @replica_read
    async def named(self, documents: SearchScope, question: str) -> DocumentScope:
        scope = DocumentScope.of(documents)
        words = question_words(question)
        if not scope or not words:
            return DocumentScope([])
        async with self.sessionmaker() as session:
            condition, parameters = await self._condition(
                session, scope, DocumentFilters(), reader=None
            )
            rows = await sql.names_like(session, condition, parameters, words, NAMES_COMPARED)
        versions = scope.by_id
        return DocumentScope(
            versions.get(row.id, DocumentRef(row.id, row.owner_id, row.version))
            for row in rows
            if names(question, row.filename)
        )

    @replica_read
    async def narrowed(
        self, documents: SearchScope, filters: DocumentFilters, reader: uuid.UUID | None
    ) -> DocumentScope:
        scope = DocumentScope.of(documents)
        if filters.empty or not scope:
            return scope
        async with self.sessionmaker() as session:
            condition, parameters = await self._condition(session, scope, filters, reader)
            rows = await sql.refs(session, condition, parameters, LISTED_UP_TO + 1)
            if len(rows) <= LISTED_UP_TO:
                versions = scope.by_id
                return DocumentScope(
                    versions.get(row.id, DocumentRef(row.id, row.owner_id, row.version))
                    for row in rows
                )
            size = await sql.count(session, condition, parameters)
        return DocumentScope(
            None,
            condition=ScopeCondition(condition, parameters),
            owners=scope.owners,
            size=size,
        )
