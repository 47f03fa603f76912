"""The message flow: a user's message in, a grounded (or general) answer out.

Three phases, so that no database connection is held while the model thinks and the user's
message survives a model failure:
1. `start_turn` (request session, committed): chat, user message, document scope, history.
2. `plan_answer` (no database): retrieval and the prompt.
3. `_save_answer` (fresh session): citations post-processed, assistant message and events saved.
`send` runs them for a whole answer; `stream` yields Server-Sent Events along the way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.chats import repository, service
from docchat.chats.models import Chat, Message, MessageRole
from docchat.chats.schemas import MessageCreate, MessageExchange, MessageRead
from docchat.components import Components
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents import service as documents_service
from docchat.documents.models import Document, DocumentStatus
from docchat.events import service as events_service
from docchat.kit.errors import DocchatError, Unprocessable
from docchat.llm import prompts
from docchat.llm.client import StreamEnd
from docchat.retrieval.citations import (
    apply_citations,
    has_markers,
    infer_citations,
    says_information_is_missing,
    strip_markers,
)
from docchat.retrieval.context import build_context, estimate_tokens, format_context
from docchat.retrieval.schemas import Source
from docchat.retrieval.search import search
from docchat.users.models import User

logger = logging.getLogger(__name__)
PROMPT_OVERHEAD_TOKENS = 200
_background: set[asyncio.Task[Any]] = set()


@dataclass(frozen=True)
class Options:
    rag_enabled: bool
    top_k: int
    model: str
    strict: bool
    reformulate: bool


@dataclass(frozen=True)
class Turn:
    """What phase 1 decided: plain values only, safe to use after its session closed."""

    user_id: uuid.UUID
    chat_id: uuid.UUID
    user_message: MessageRead
    question: str
    history: list[dict[str, str]]
    scope: str  # message | chat | all
    document_ids: list[uuid.UUID]
    options: Options
    started: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class Plan:
    """What phase 2 decided: the prompt, and the sources the answer may cite."""

    messages: list[dict[str, Any]]
    candidates: list[Source]
    meta: dict[str, Any]
    # The full text of each candidate, for attributing answers that carry no markers.
    passages: list[str] = field(default_factory=list)
    # Set when no model call is needed (strict mode with nothing found).
    fixed_answer: str | None = None


@dataclass(frozen=True)
class Generated:
    content: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


# -- phase 1 ----------------------------------------------------------------------------------


def _resolve_options(components: Components, user: User, request: MessageCreate) -> Options:
    given, rag = request.options, components.settings.rag
    return Options(
        rag_enabled=rag.enabled if given.rag_enabled is None else given.rag_enabled,
        top_k=given.top_k or rag.top_k,
        model=given.model or user.preferred_model or components.settings.llm.model,
        strict=rag.strict if given.strict is None else given.strict,
        reformulate=rag.reformulate if given.reformulate is None else given.reformulate,
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


async def _scope(
    session: AsyncSession, user: User, chat: Chat, requested: list[Document]
) -> tuple[str, list[uuid.UUID]]:
    """Message documents > chat documents > all readable ones; only completed ones count."""
    if requested:
        return "message", [d.id for d in requested if d.status == DocumentStatus.completed]
    linked = await repository.document_ids(session, chat.id)
    if linked:
        documents = await documents_repository.readable_among(
            session, user, linked, status=DocumentStatus.completed
        )
        return "chat", [d.id for d in documents]
    statement = (
        documents_repository.readable_by(user)
        .where(Document.status == DocumentStatus.completed)
        .with_only_columns(Document.id)
    )
    return "all", list((await session.execute(statement)).scalars())


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
    scope, document_ids = await _scope(session, user, chat, requested)
    options = _resolve_options(components, user, request)
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
        document_ids=document_ids,
        options=options,
    )
    await session.commit()
    _publish(
        components,
        events_service.QUERY_SUBMITTED,
        user.id,
        {"chat_id": str(chat.id), "model": options.model},
    )
    return turn


# -- phase 2 ----------------------------------------------------------------------------------


async def _search_query(components: Components, turn: Turn) -> str:
    if not (turn.options.reformulate and turn.history):
        return turn.question
    try:
        rewritten = await components.llm.complete(
            prompts.reformulation_messages(turn.history, turn.question),
            model=turn.options.model,
            max_tokens=100,
            temperature=0.0,
        )
    except DocchatError as exc:
        logger.warning("query reformulation failed, searching with the question as asked: %s", exc)
        return turn.question
    return rewritten.content.strip() or turn.question


def _context_budget(components: Components, turn: Turn) -> int:
    llm, rag = components.settings.llm, components.settings.rag
    used = estimate_tokens(turn.question) + sum(estimate_tokens(m["content"]) for m in turn.history)
    room = llm.context_window - llm.max_tokens - used - PROMPT_OVERHEAD_TOKENS
    return max(0, min(rag.max_context_tokens, room))


async def plan_answer(components: Components, turn: Turn) -> Plan:
    meta: dict[str, Any] = {"grounded": False, "scope": turn.scope, "documents_searched": 0}
    general = prompts.general_messages(turn.history, turn.question)
    if not turn.options.rag_enabled:
        return Plan(general, [], {**meta, "reason": "rag_disabled"})
    if not turn.document_ids:
        return _no_match(turn, general, {**meta, "reason": "no_documents"})
    query = await _search_query(components, turn)
    rag = components.settings.rag
    result = await search(
        components.embedder,
        components.vector_store,
        query,
        turn.document_ids,
        top_k=turn.options.top_k,
        similarity_floor=rag.similarity_floor,
    )
    meta.update(
        documents_searched=len(turn.document_ids),
        retrieval_ms=round(result.elapsed_ms, 1),
        retrieval_count=len(result.chunks),
    )
    if result.unavailable:
        # Degrade, don't fail: answer generally and say why.
        return Plan(general, [], {**meta, "reason": "retrieval_unavailable"})
    entries = build_context(result.chunks, _context_budget(components, turn))
    if not entries:
        return _no_match(turn, general, {**meta, "reason": "no_match"})
    context = format_context(entries)
    logger.info(
        "retrieval chat=%s scope=%s documents=%d chunks=%d context_chars=%d retrieval_ms=%.1f",
        turn.chat_id,
        turn.scope,
        len(turn.document_ids),
        len(entries),
        len(context),
        result.elapsed_ms,
    )
    messages = prompts.grounded_messages(
        turn.history, context, turn.question, strict=turn.options.strict
    )
    return Plan(
        messages,
        [entry.source for entry in entries],
        {**meta, "context_chars": len(context)},
        passages=[entry.text for entry in entries],
    )


def _no_match(turn: Turn, general: list[dict[str, Any]], meta: dict[str, Any]) -> Plan:
    if turn.options.strict:
        return Plan(general, [], meta, fixed_answer=prompts.NOT_FOUND_ANSWER)
    return Plan(general, [], meta)


# -- phase 3 ----------------------------------------------------------------------------------


def _cite(plan: Plan, content: str, turn: Turn) -> tuple[str, list[Source] | None, dict[str, Any]]:
    meta = dict(plan.meta)
    strict = turn.options.strict
    if plan.fixed_answer is not None:
        return plan.fixed_answer, None, meta
    if not plan.candidates:
        return content, None, meta
    if says_information_is_missing(content):
        meta.update(grounded=False, reason="insufficient_information")
        answer = prompts.NOT_FOUND_ANSWER if strict else strip_markers(content)
        return answer, None, meta
    mode = "model"
    if not strict and not has_markers(content, len(plan.candidates)):
        content = infer_citations(content, plan.passages, turn.question)
        mode = "inferred"
    cited = apply_citations(content, plan.candidates)
    if not cited.sources:
        meta.update(grounded=False, reason="not_cited")
        return (prompts.NOT_FOUND_ANSWER if strict else cited.content), None, meta
    meta.update(grounded=True, reason=None, citation_count=len(cited.sources), citation_mode=mode)
    return cited.content, cited.sources, meta


async def _save_answer(
    components: Components, turn: Turn, plan: Plan, generated: Generated
) -> MessageRead:
    content, sources, meta = _cite(plan, generated.content, turn)
    latency_ms = int((time.perf_counter() - turn.started) * 1000)
    async with components.sessionmaker() as session:
        message = Message(
            chat_id=turn.chat_id,
            role=MessageRole.assistant,
            content=content,
            sources=[source.model_dump(mode="json") for source in sources] if sources else None,
            model=generated.model,
            latency_ms=latency_ms,
            prompt_tokens=generated.prompt_tokens,
            completion_tokens=generated.completion_tokens,
            meta=meta,
        )
        session.add(message)
        chat = (await session.execute(select(Chat).where(Chat.id == turn.chat_id))).scalar_one()
        chat.updated_at = utcnow()
        payload = {
            "chat_id": str(turn.chat_id),
            "model": generated.model,
            "latency_ms": latency_ms,
            "citation_count": len(sources or []),
            "retrieval_count": meta.get("retrieval_count", 0),
            "grounded": meta["grounded"],
        }
        await events_service.record(
            session, events_service.RESPONSE_GENERATED, turn.user_id, payload
        )
        await session.flush()
        saved = MessageRead.model_validate(message)
        await session.commit()
    _publish(components, events_service.RESPONSE_GENERATED, turn.user_id, payload)
    logger.info(
        "answer chat=%s grounded=%s reason=%s sources=%d latency_ms=%d",
        turn.chat_id,
        meta["grounded"],
        meta.get("reason"),
        len(sources or []),
        latency_ms,
    )
    return saved


def _publish(
    components: Components, event_type: str, user_id: uuid.UUID, payload: dict[str, Any]
) -> None:
    if not components.publisher.enabled:
        return
    body = {"type": event_type, "user_id": str(user_id), **payload}
    task = asyncio.create_task(
        components.publisher.publish(events_service.ROUTING_KEYS[event_type], body)
    )
    _background.add(task)
    task.add_done_callback(_background.discard)


# -- the two ways to run a turn ------------------------------------------------------------------


async def send(
    session: AsyncSession, components: Components, user: User, request: MessageCreate
) -> MessageExchange:
    turn = await start_turn(session, components, user, request)
    plan = await plan_answer(components, turn)
    if plan.fixed_answer is not None:
        generated = Generated(content=plan.fixed_answer, model=turn.options.model)
    else:
        completion = await components.llm.complete(plan.messages, model=turn.options.model)
        generated = Generated(
            completion.content,
            completion.model,
            completion.prompt_tokens,
            completion.completion_tokens,
        )
    answer = await _save_answer(components, turn, plan, generated)
    return MessageExchange(
        chat_id=turn.chat_id, user_message=turn.user_message, assistant_message=answer
    )


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


async def stream(components: Components, turn: Turn) -> AsyncIterator[str]:
    """Server-Sent Events for a started turn: meta, sources, delta..., then done or error.

    Nothing is saved for an answer that did not finish (model error or client gone).
    """
    yield sse(
        "meta", {"chat_id": turn.chat_id, "user_message": turn.user_message.model_dump(mode="json")}
    )
    try:
        plan = await plan_answer(components, turn)
        yield sse(
            "sources",
            {"sources": [s.model_dump(mode="json") for s in plan.candidates], **plan.meta},
        )
        if plan.fixed_answer is not None:
            yield sse("delta", {"text": plan.fixed_answer})
            generated = Generated(content=plan.fixed_answer, model=turn.options.model)
        else:
            pieces: list[str] = []
            end = StreamEnd(model=turn.options.model)
            async for item in components.llm.stream(plan.messages, model=turn.options.model):
                if isinstance(item, StreamEnd):
                    end = item
                else:
                    pieces.append(item)
                    yield sse("delta", {"text": item})
            generated = Generated(
                "".join(pieces), end.model, end.prompt_tokens, end.completion_tokens
            )
        answer = await _save_answer(components, turn, plan, generated)
    except DocchatError as exc:
        logger.warning("streamed answer for chat %s failed: %s", turn.chat_id, exc.message)
        yield sse("error", {"detail": exc.message, "status": exc.status_code})
        return
    except Exception:
        logger.exception("streamed answer for chat %s failed", turn.chat_id)
        yield sse("error", {"detail": "Internal server error", "status": 500})
        return
    yield sse("done", {"assistant_message": answer.model_dump(mode="json")})
