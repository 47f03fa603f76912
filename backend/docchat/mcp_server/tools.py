"""What an agent may do over MCP, without HTTP: search, ask, list collections and documents.

Each tool acts for one user (the API key's) through the same services as the REST routes, so
it reads exactly what that user may read: the scope is resolved at every call (a revoked share
counts at the next one), chosen collections and documents must be readable (else the call
fails naming the first that is not), and an answer holds and spends the user's token quota and
is recorded like any other (`via`: mcp).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import QuotaSettings
from docchat.documents import service as documents_service
from docchat.documents.models import DocumentStatus
from docchat.documents.scopes import search_scope
from docchat.kit.errors import BadRequest, ServiceUnavailable
from docchat.kit.pagination import PageParams
from docchat.openai_compat.service import Completions
from docchat.quotas import service as quotas
from docchat.retrieval.context import TokenBudget, build_context, with_highlights
from docchat.retrieval.filters import DocumentFilters
from docchat.retrieval.index import DocumentScope
from docchat.retrieval.retriever import Retriever
from docchat.retrieval.schemas import Source
from docchat.sharing import collections as sharing
from docchat.sharing.schemas import CollectionRead
from docchat.users.models import User

# A search returns at most this many passages (as the model's own search tool).
MAX_PASSAGES = 20
# Passages a search returns may hold this many tokens together (about 4 characters each).
SEARCH_CONTEXT_TOKENS = 8_000
MAX_QUERY_CHARS = 10_000
MAX_PAGE = 100


class Passage(BaseModel):
    number: int = Field(description="Rank of the passage in this search, from 1")
    text: str = Field(description="The passage as indexed (a chunk of about 1,000 characters)")
    source: Source


class SearchResults(BaseModel):
    passages: list[Passage]
    documents_searched: int = Field(description="How many documents the search covered")


class Answer(BaseModel):
    answer: str = Field(description="The answer; [n] cites sources[n-1]")
    sources: list[Source]
    grounded: bool = Field(
        description="Whether the answer cites the documents (false: none held it)"
    )
    model: str


class CollectionPage(BaseModel):
    items: list[CollectionRead]
    total: int


class DocumentSummary(BaseModel):
    id: uuid.UUID
    filename: str
    status: DocumentStatus
    page_count: int | None
    chunk_count: int | None
    created_at: datetime
    error: str | None = Field(description="Why processing failed, when it did")


class DocumentPage(BaseModel):
    items: list[DocumentSummary]
    total: int


@dataclass(frozen=True)
class LibraryTools:
    """The MCP tools' work, for a signed-in user; the MCP server (`server.py`) only routes."""

    quota: QuotaSettings
    sessionmaker: async_sessionmaker[AsyncSession]
    retriever: Retriever
    completions: Completions

    async def _scope(
        self,
        session: AsyncSession,
        user: User,
        collection_ids: Sequence[uuid.UUID],
        document_ids: Sequence[uuid.UUID],
    ) -> DocumentScope:
        """All the user may read, or the chosen collections' and documents' (each must be
        readable: a 404 names the first that is not, as on the REST routes)."""
        await sharing.require_readable(session, user, collection_ids)
        await documents_service.require_readable(session, user, document_ids)
        if not collection_ids and not document_ids:
            return await search_scope(session, user)
        return await search_scope(
            session, user, among=list(document_ids), collections=list(collection_ids)
        )

    async def search(
        self,
        session: AsyncSession,
        user: User,
        query: str,
        *,
        collection_ids: Sequence[uuid.UUID] = (),
        document_ids: Sequence[uuid.UUID] = (),
        top_k: int = 5,
    ) -> SearchResults:
        """The passages that best match `query`, each with its source's location, preview and
        highlight; none when even the best is below the match floor (as for an answer), unless
        the caller chose the documents. The session is committed (its connection released)
        before the search, which reads with sessions of its own."""
        documents = await self._scope(session, user, collection_ids, document_ids)
        await session.commit()
        await session.close()
        chosen = bool(document_ids)
        result = await self.retriever.search(
            query, documents, min(top_k, MAX_PASSAGES), require_match=not chosen
        )
        if result.unavailable:
            raise ServiceUnavailable("Document search is unavailable right now; try again soon")
        entries = build_context(result.chunks, TokenBudget(SEARCH_CONTEXT_TOKENS))
        entries = with_highlights(entries, query)
        return SearchResults(
            passages=[
                Passage(number=entry.number, text=entry.text, source=entry.source)
                for entry in entries
            ],
            documents_searched=documents.size,
        )

    async def ask(
        self,
        session: AsyncSession,
        user: User,
        question: str,
        *,
        collection_ids: Sequence[uuid.UUID] = (),
        document_ids: Sequence[uuid.UUID] = (),
        research: bool = False,
        filters: DocumentFilters | None = None,
    ) -> Answer:
        """A cited answer from the documents, as the OpenAI-compatible endpoint gives one: the
        quota is held while it is written; the question is recorded and the session committed
        (its connection released) before the search and the model."""
        started = time.perf_counter()
        user_id = user.id  # `user` is detached once the session closes
        hold = await quotas.hold_tokens(
            session,
            user,
            self.quota,
            tokens=self.completions.answer_tokens(question),
            release_with=self.sessionmaker,
        )
        try:
            documents = await self._scope(session, user, collection_ids, document_ids)
            asked = await self.completions.ask(
                session,
                user,
                query=question,
                documents=documents,
                index_name="chosen" if collection_ids or document_ids else "all",
                chosen=bool(document_ids),
                via="mcp",
                started=started,
                research=research,
                filters=filters,
            )
            await session.commit()
            await session.close()
            prepared = await self.completions.plan(asked)
            cited, generated = await self.completions.answer(user_id, prepared)
        finally:
            await hold.release()
        return Answer(
            answer=cited.content,
            sources=cited.sources or [],
            grounded=bool(cited.sources),
            model=generated.model,
        )

    async def collections(
        self, session: AsyncSession, user: User, *, skip: int = 0, limit: int = 50
    ) -> CollectionPage:
        items, total = await sharing.list_readable(session, user, PageParams(skip, limit))
        return CollectionPage(items=items, total=total)

    async def documents(
        self,
        session: AsyncSession,
        user: User,
        *,
        collection_id: uuid.UUID | None = None,
        name: str | None = None,
        skip: int = 0,
        limit: int = 50,
    ) -> DocumentPage:
        page = PageParams(skip, limit)
        if collection_id is not None and name:
            raise BadRequest("Filter by collection_id or by name, not both")
        if collection_id is not None:
            items, total = await sharing.documents(session, user, collection_id, page)
        else:
            items, total = await documents_service.list_readable(session, user, page, name=name)
        return DocumentPage(
            items=[DocumentSummary.model_validate(item, from_attributes=True) for item in items],
            total=total,
        )
