"""Phase 1 of the message flow: the chat, the user's message, the document scope, the history.

Committed before the model is called, so the user's message survives any model failure.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.chats import repository, service
from docchat.chats.models import Chat, Message, MessageRole
from docchat.chats.schemas import MessageCreate, MessageRead
from docchat.components import Components
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents import service as documents_service
from docchat.documents.filetypes import FileKind
from docchat.documents.models import Document, DocumentStatus
from docchat.events import service as events_service
from docchat.kit.errors import Unprocessable
from docchat.llm.catalog import resolve_model
from docchat.retrieval.inline import InlineDocument
from docchat.retrieval.vectorstore import DocumentRef
from docchat.users.models import User


@dataclass(frozen=True)
class Options:
    rag_enabled: bool
    top_k: int
    model: str
    strict: bool
    reformulate: bool
    retrieval: Literal["auto", "tool"]


@dataclass(frozen=True)
class Turn:
    """What phase 1 decided: plain values only, safe to use after its session closed."""

    user_id: uuid.UUID
    chat_id: uuid.UUID
    user_message: MessageRead
    question: str
    history: list[dict[str, str]]
    scope: str  # message | chat | all
    # Completed documents to search (from the owner-scoped query only).
    documents: list[DocumentRef]
    # Documents attached to this message that are still processing: read directly.
    inline_documents: list[InlineDocument]
    options: Options
    started: float = field(default_factory=time.perf_counter)


def _resolve_options(components: Components, user: User, request: MessageCreate) -> Options:
    given, rag = request.options, components.settings.rag
    return Options(
        rag_enabled=rag.enabled if given.rag_enabled is None else given.rag_enabled,
        top_k=given.top_k or rag.top_k,
        model=resolve_model(components.settings.llm, given.model or user.preferred_model),
        strict=rag.strict if given.strict is None else given.strict,
        reformulate=rag.reformulate if given.reformulate is None else given.reformulate,
        retrieval=given.retrieval or rag.retrieval,
    )


async def _open_chat(session: AsyncSession, user: User, request: MessageCreate) -> Chat:
    if request.chat_id is None:
        return await service.create(
            session,
            user,
            title=service.title_from(request.content),
            category_id=request.category_id,
            document_ids=request.document_ids,
        )
    # Locked so that two messages sent at once into one chat are numbered one after the other.
    return await service.get_owned(session, user, request.chat_id, for_update=True)


def _refs(documents: list[Document]) -> list[DocumentRef]:
    return [DocumentRef.of(document) for document in documents]


async def _scope(
    session: AsyncSession, user: User, chat: Chat, requested: list[Document]
) -> tuple[str, list[DocumentRef]]:
    """Message documents > chat documents > all readable ones; only completed ones count."""
    if requested:
        return "message", _refs([d for d in requested if d.status == DocumentStatus.completed])
    linked = await repository.document_ids(session, chat.id)
    if linked:
        documents = await documents_repository.readable_among(
            session, user, linked, status=DocumentStatus.completed
        )
        return "chat", _refs(documents)
    statement = (
        documents_repository.readable_by(user)
        .where(Document.status == DocumentStatus.completed)
        .with_only_columns(Document.id, Document.owner_id)
    )
    rows = (await session.execute(statement)).all()
    return "all", [DocumentRef.of(row) for row in rows]


async def _conversation_documents(
    session: AsyncSession, user: User, chat: Chat, documents: list[DocumentRef]
) -> list[DocumentRef]:
    """Tool mode also searches every completed document attached to any message of the chat."""
    attached = await repository.message_document_ids(session, chat.id)
    known = {document.id for document in documents}
    extra = [i for i in attached if i not in known]
    if not extra:
        return documents
    readable = await documents_repository.readable_among(
        session, user, extra, status=DocumentStatus.completed
    )
    return documents + _refs(readable)


def _inline(components: Components, requested: list[Document]) -> list[InlineDocument]:
    return [
        InlineDocument(
            id=document.id,
            owner_id=document.owner_id,
            filename=document.filename,
            kind=FileKind(document.content_type),
            path=components.storage.path(document.storage_key),
            sha256=document.sha256,
        )
        for document in requested
        if document.status == DocumentStatus.processing
    ]


async def _history(
    session: AsyncSession, chat_id: uuid.UUID, before_seq: int, components: Components
) -> list[dict[str, str]]:
    rag = components.settings.rag
    messages = await repository.recent_history(
        session, chat_id, pairs=rag.max_history_pairs, before_seq=before_seq
    )
    return [
        {"role": str(message.role), "content": message.content[: rag.history_message_chars]}
        for message in messages
    ]


async def start_turn(
    session: AsyncSession, components: Components, user: User, request: MessageCreate
) -> Turn:
    """Phase 1, committed before the model is called so the user's message is never lost."""
    limit = components.settings.max_message_chars
    if len(request.content) > limit:
        raise Unprocessable(f"The message is too long: at most {limit} characters")
    requested = await documents_service.require_readable(session, user, request.document_ids)
    chat = await _open_chat(session, user, request)
    message = Message(chat_id=chat.id, role=MessageRole.user, content=request.content)
    session.add(message)
    chat.updated_at = utcnow()
    await session.flush()
    await repository.link_message_documents(session, message.id, [d.id for d in requested])
    options = _resolve_options(components, user, request)
    scope, documents = await _scope(session, user, chat, requested)
    if options.retrieval == "tool":
        documents = await _conversation_documents(session, user, chat, documents)
    await events_service.record(
        session,
        events_service.QUERY_SUBMITTED,
        user.id,
        {"chat_id": str(chat.id), "query": request.content[:1000], "model": options.model},
    )
    turn = Turn(
        user_id=user.id,
        chat_id=chat.id,
        user_message=MessageRead.model_validate(message),
        question=request.content,
        history=await _history(session, chat.id, message.seq, components),
        scope=scope,
        documents=documents,
        inline_documents=_inline(components, requested),
        options=options,
    )
    await session.commit()
    return turn
