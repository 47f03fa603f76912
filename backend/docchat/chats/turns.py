"""Phase 1 of the message flow: the chat, the user's message, the document scope, the history.

Committed before the model is called, so the user's message survives any model failure. The
result is a `Turn`: plain values, among them the engine's `Question`, safe to use after the
session closed.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.answers.meta import Scope
from docchat.answers.values import AnswerOptions, Question
from docchat.chats import history, repository, summaries
from docchat.chats import service as chats_service
from docchat.chats.models import Chat, Message, MessageRole
from docchat.chats.schemas import MessageCreate, MessageRead
from docchat.config import HistorySettings, SearchSettings, Settings
from docchat.documents import repository as documents_repository
from docchat.documents import service as documents_service
from docchat.documents.models import Document, DocumentStatus
from docchat.documents.scopes import search_scope
from docchat.documents.storage import FileStorage
from docchat.events import service as events_service
from docchat.extraction.kinds import FileKind
from docchat.kit.errors import NotFound, Unprocessable
from docchat.llm.catalog import resolve_model
from docchat.quotas.service import Hold
from docchat.retrieval import followups
from docchat.retrieval.index import DocumentScope
from docchat.retrieval.inline import InlineDocument
from docchat.sharing import collections as sharing
from docchat.users.models import User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Turn:
    """What phase 1 decided: plain values only, safe to use after its session closed."""

    user_id: uuid.UUID
    chat_id: uuid.UUID
    user_message: MessageRead
    question: Question
    # The answer's row, saved `streaming` with the question and written over when it ends.
    answer_id: uuid.UUID
    # An edit or a regeneration: the messages from this seq up to the new question's give
    # way to it once its answer is saved.
    replaces_from_seq: int | None = None
    question_seq: int = 0
    # The earlier exchanges the chat's questions send whole (its setting or the default), and
    # how many came before this question (as far as they were read, at least that many).
    remembers: int = 10
    exchanges_before: int = 0
    # Of those, the ones the chat's summary does not cover yet.
    unsummarised_before: int = 0
    # When this answer takes the chat past its window: the earlier exchanges as relevance
    # reads them (`Exchange.text`), embedded with it so the next question finds them ready.
    earlier_exchanges: tuple[str, ...] = ()
    # A regeneration of the last question: its answer, kept as an earlier version of the new.
    keeps_answer_id: uuid.UUID | None = None
    # An edit of the first question renames a chat named after it: (old title, new title).
    retitle: tuple[str, str] | None = None
    started: float = field(default_factory=time.perf_counter)
    # The daily quota's tokens held for this answer until its usage is recorded.
    hold: Hold = field(default_factory=Hold)


def _options(settings: Settings, user: User, chat: Chat, request: MessageCreate) -> AnswerOptions:
    """The message's options, else the chat's settings, else the user's and server's defaults."""
    given, search, answers = request.options, settings.search, settings.answers
    strict = given.strict if given.strict is not None else chat.strict
    return AnswerOptions(
        rag_enabled=_rag_enabled(search, request),
        top_k=given.top_k or search.top_k,
        model=resolve_model(settings.llm, given.model or chat.model or user.preferred_model),
        strict=answers.strict if strict is None else strict,
        reformulate=_reformulate(search, request),
        retrieval=_retrieval(search, request),
        answer_mode=given.answer_mode or answers.answer_mode,
        research=bool(given.research),
        filters=given.filters.filters() if given.filters is not None else None,
    )


# These three switches come from the message or the server, never from the chat: they are
# known before the chat is read.
def _rag_enabled(search: SearchSettings, request: MessageCreate) -> bool:
    given = request.options.rag_enabled
    return search.enabled if given is None else given


def _reformulate(search: SearchSettings, request: MessageCreate) -> bool:
    given = request.options.reformulate
    return search.reformulate if given is None else given


def _retrieval(search: SearchSettings, request: MessageCreate) -> Literal["auto", "tool"]:
    return request.options.retrieval or search.retrieval


def searches_as_worded(search: SearchSettings, request: MessageCreate) -> bool:
    """Whether the message, if it searches its documents, searches with its own words: known
    as it arrives, so its query can be embedded while the turn is saved. Not when search is
    off or left to the model (tool mode), nor for a follow-up (the LLM may reword it, or it is
    searched with the previous question). Call it for a message within the length limit."""
    if not _rag_enabled(search, request) or _retrieval(search, request) != "auto":
        return False
    if request.chat_id is None:
        return True
    return not (_reformulate(search, request) or followups.refers_back(request.content))


async def _open_chat(
    session: AsyncSession,
    user: User,
    request: MessageCreate,
    requested: list[Document],
    collections: list[uuid.UUID],
) -> tuple[Chat, repository.ChatLinks]:
    """The message's chat (a new one linked to the message's documents and collections) and
    what is linked to it."""
    if request.chat_id is None:
        chat = await chats_service.create(
            session,
            user,
            title=chats_service.title_from(request.content),
            category_id=request.category_id,
            document_ids=request.document_ids,
            collection_ids=request.collection_ids,
        )
        return chat, repository.ChatLinks([d.id for d in requested], list(collections))
    # Locked so that two messages sent at once into one chat are numbered one after the other.
    return await chats_service.get_owned_for_message(session, user, request.chat_id)


async def _scope(
    session: AsyncSession,
    user: User,
    linked: repository.ChatLinks,
    requested: list[Document],
    collections: list[uuid.UUID],
) -> tuple[Scope, DocumentScope]:
    """The message's documents and collections > the chat's > all readable documents; only
    completed documents count. Collections are read now: a revoked one adds nothing."""
    if requested or collections:
        return "message", await search_scope(
            session, user, among=[d.id for d in requested], collections=collections
        )
    # A chat linked to a collection since revoked still searches only what it is linked to.
    if linked.document_ids or linked.collection_ids:
        readable = await chats_service.readable_collection_ids(session, user, linked.collection_ids)
        return "chat", await search_scope(
            session, user, among=linked.document_ids, collections=readable
        )
    return "all", await search_scope(session, user)


async def _conversation_documents(
    session: AsyncSession, user: User, chat: Chat, documents: DocumentScope
) -> DocumentScope:
    """Tool mode also searches every completed document attached to any message of the chat."""
    attached = await repository.message_document_ids(session, chat.id)
    extra = [i for i in attached if i not in documents.by_id]
    if not extra:
        return documents
    return documents.with_documents(list(await search_scope(session, user, among=extra)))


async def _replaced_question(
    session: AsyncSession, chat: Chat, message_id: uuid.UUID | None
) -> Message | None:
    if message_id is None:
        return None
    replaced = await repository.get_question(session, chat.id, message_id)
    if replaced is None:
        raise NotFound("No such question in this chat")
    return replaced


async def _regenerated_answer(
    session: AsyncSession, chat: Chat, replaced: Message | None, content: str
) -> Message | None:
    """The answer a regeneration replaces (the same words, asked again, of the chat's last
    question): it stays as an earlier version of the new one. An edit keeps none."""
    if replaced is None or replaced.content != content:
        return None
    return await repository.answer_after(session, chat.id, replaced)


async def _documents_of(session: AsyncSession, user: User, question: Message) -> list[Document]:
    """The documents a question was asked about (those the user may still read): an edit or a
    regeneration that names none asks about them again."""
    attached = await repository.attached_document_ids(session, question.id)
    return await documents_repository.readable_among(session, user, attached) if attached else []


def _inline(storage: FileStorage, requested: list[Document]) -> list[InlineDocument]:
    return [
        InlineDocument(
            id=document.id,
            owner_id=document.owner_id,
            filename=document.filename,
            kind=FileKind(document.content_type),
            storage=storage,
            storage_key=document.storage_key,
            sha256=document.sha256,
            version=document.version,
        )
        for document in requested
        if document.status in (DocumentStatus.queued, DocumentStatus.processing)
    ]


@dataclass(frozen=True)
class _Memory:
    """What a question remembers of its chat."""

    # The messages before the question (as far as relevance reads) and their exchanges.
    recent: repository.RecentHistory
    exchanges: list[history.Exchange]
    # The history the prompt gets (`chats.history`).
    history: list[dict[str, str]]
    # The chat's summary when it covers only what came before.
    summary: str | None


async def _remembered(
    session: AsyncSession,
    settings: HistorySettings,
    chat: Chat,
    question: str,
    before_seq: int,
    relevance: history.Relevance | None,
) -> _Memory:
    """What the question remembers of the messages before `before_seq`."""
    window = summaries.history_pairs(chat, settings)
    # Enough to see when half a window has left it unsummarised (`summaries.fold_batch`), and
    # what relevance compares.
    summarised = window > 0 and settings.summarise_history
    compared = relevance is not None and window > 0
    searched = max(
        window + summaries.fold_batch(window) if summarised else window,
        settings.history_search_pairs if compared else 0,
    )
    recent = await repository.recent_history(
        session, chat.id, pairs=searched, before_seq=before_seq
    )
    earlier = recent.messages
    exchanges = history.exchanges_of(earlier)
    scores = None
    if relevance is not None and len(exchanges) > window > 0:
        try:
            scores = await relevance.scores(question, exchanges)
        except Exception:  # the embedder failed: the latest exchanges, as without relevance
            logger.exception("history relevance failed for chat %s", chat.id)
    chosen = history.choose(
        exchanges,
        scores,
        pairs=window,
        token_budget=settings.history_tokens,
        message_chars=settings.history_message_chars,
    )
    # None when the chat remembers nothing, when summaries were turned off since, or for an
    # edit of a question the summary covers (it tells what came after).
    summary = (
        chat.summary
        if window > 0 and settings.summarise_history and chat.summary_through_seq < before_seq
        else None
    )
    return _Memory(
        recent, exchanges, history.as_history(chosen, settings.history_message_chars), summary
    )


def _passing_the_window(
    earlier: list[history.Exchange], remembers: int, relevance: history.Relevance | None
) -> tuple[str, ...]:
    """The earlier exchanges' texts when the next question will be the chat's first to choose
    among its exchanges by relevance: embedded after this answer, not all at once when that
    question is asked (50 ms on its path at 10 exchanges)."""
    if relevance is None or remembers <= 0 or len(earlier) != remembers:
        return ()
    return tuple(exchange.text() for exchange in earlier)


def _retitle(
    chat: Chat, replaced: Message | None, earlier: list[Message], content: str
) -> tuple[str, str] | None:
    """The chat's new name when its first question, which named it, is edited."""
    if replaced is None or earlier:
        return None
    if not chats_service.named_after(chat.title, replaced.content):
        return None  # the user named it
    return chat.title, chats_service.title_from(content)


# Told the message's scope as soon as it is read, before the turn is saved.
ScopeRead = Callable[[Scope, DocumentScope, AnswerOptions], None]


@dataclass(frozen=True)
class _Target:
    """What a message refers to: its chat, the documents and collections it names, and for an
    edit or a regeneration, the question it replaces."""

    chat: Chat
    linked: repository.ChatLinks
    requested: list[Document]
    collections: list[uuid.UUID]
    replaced: Message | None
    # A regeneration's earlier answer, kept as a version of the new one.
    regenerated: Message | None


async def _target(session: AsyncSession, user: User, request: MessageCreate) -> _Target:
    requested = await documents_service.require_readable(session, user, request.document_ids)
    collections = await sharing.require_readable(session, user, request.collection_ids)
    chat, linked = await _open_chat(session, user, request, requested, collections)
    replaced = await _replaced_question(session, chat, request.replaces)
    regenerated = await _regenerated_answer(session, chat, replaced, request.content)
    if replaced is not None and not requested and not collections:
        requested = await _documents_of(session, user, replaced)
    return _Target(chat, linked, requested, collections, replaced, regenerated)


async def _save_question(
    session: AsyncSession, user: User, target: _Target, content: str, model: str
) -> tuple[Message, Message]:
    """The question and its answer's row (`streaming`), with the documents the question names."""
    message, answer = repository.add_exchange(session, target.chat, content)
    events_service.add(
        session,
        events_service.QUERY_SUBMITTED,
        user.id,
        {"chat_id": str(target.chat.id), "query": content[:1000], "model": model},
    )
    await session.flush()  # the turn's rows written together: their numbers are needed next
    await repository.link_message_documents(session, message.id, [d.id for d in target.requested])
    return message, answer


async def start_turn(
    session: AsyncSession,
    settings: Settings,
    storage: FileStorage,
    user: User,
    request: MessageCreate,
    *,
    on_scope: ScopeRead | None = None,
    relevance: history.Relevance | None = None,
) -> Turn:
    """Phase 1, committed before the model is called so the user's message is never lost."""
    limit = settings.max_message_chars
    if len(request.content) > limit:
        raise Unprocessable(f"The message is too long: at most {limit} characters")
    target = await _target(session, user, request)
    chat = target.chat
    options = _options(settings, user, chat, request)
    scope, documents = await _scope(
        session, user, target.linked, target.requested, target.collections
    )
    if on_scope is not None:
        on_scope(scope, documents, options)
    message, answer = await _save_question(session, user, target, request.content, options.model)
    if options.retrieval == "tool":
        documents = await _conversation_documents(session, user, chat, documents)
    # An edited question's history is what came before the question it replaces.
    replaced = target.replaced
    history_end = replaced.seq if replaced is not None else message.seq
    memory = await _remembered(
        session, settings.history, chat, request.content, history_end, relevance
    )
    question = Question(
        text=request.content,
        history=memory.history,
        summary=memory.summary,
        # A chat that remembers nothing follows up on nothing.
        follows_grounded_answer=bool(memory.history) and memory.recent.last_answer_grounded,
        documents=documents,
        options=options,
        scope=scope,
        inline_documents=_inline(storage, target.requested),
        label=str(chat.id),
        reader=user.id,
    )
    turn = _turn(settings, user, target, (message, answer), question, memory, relevance)
    await session.commit()
    return turn


def _turn(
    settings: Settings,
    user: User,
    target: _Target,
    rows: tuple[Message, Message],
    question: Question,
    memory: _Memory,
    relevance: history.Relevance | None,
) -> Turn:
    """What phase 1 decided, from the saved question and its answer's row (`rows`)."""
    chat, replaced, (message, answer) = target.chat, target.replaced, rows
    remembers = summaries.history_pairs(chat, settings.history)
    return Turn(
        user_id=user.id,
        chat_id=chat.id,
        user_message=MessageRead.model_validate(message),
        question=question,
        answer_id=answer.id,
        replaces_from_seq=replaced.seq if replaced is not None else None,
        question_seq=message.seq,
        remembers=remembers,
        exchanges_before=len(memory.exchanges),
        unsummarised_before=_unsummarised(chat, memory.recent.messages),
        earlier_exchanges=_passing_the_window(memory.exchanges, remembers, relevance),
        keeps_answer_id=target.regenerated.id if target.regenerated is not None else None,
        retitle=_retitle(chat, replaced, memory.recent.messages, question.text),
    )


def _unsummarised(chat: Chat, earlier: list[Message]) -> int:
    """The earlier questions the chat's summary does not cover yet."""
    return sum(
        1 for m in earlier if m.role == MessageRole.user and m.seq > chat.summary_through_seq
    )
