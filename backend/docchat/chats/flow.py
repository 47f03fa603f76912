"""The message flow: a user's message in, a grounded (or general) answer out.

Three phases, so that no database connection is held while the model thinks and the user's
message survives a model failure:
1. `turns.start_turn` (request session, committed): chat, user message, scope, history.
2. `answering` (no database): the prompt, the model (with tools if asked), the citations.
3. `_save_answer` (fresh session): the assistant message and the analytics event.
`send` runs them for a whole answer; `stream` yields Server-Sent Events along the way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.chats.answering import Generated, Plan, SourcesReady, cite, plan_answer, produce
from docchat.chats.models import Chat, Message, MessageRole
from docchat.chats.schemas import MessageCreate, MessageExchange, MessageRead
from docchat.chats.turns import Turn
from docchat.chats.turns import start_turn as _start_turn
from docchat.components import Components
from docchat.db import utcnow
from docchat.events import service as events_service
from docchat.kit.errors import DocchatError
from docchat.users.models import User

logger = logging.getLogger(__name__)


async def start_turn(
    session: AsyncSession, components: Components, user: User, request: MessageCreate
) -> Turn:
    turn = await _start_turn(session, components, user, request)
    payload = {"chat_id": str(turn.chat_id), "model": turn.options.model}
    events_service.publish(components.publisher, events_service.QUERY_SUBMITTED, user.id, payload)
    return turn


async def _save_answer(
    components: Components, turn: Turn, plan: Plan, generated: Generated
) -> MessageRead:
    content, sources, meta = cite(plan, generated.content, turn)
    latency_ms = int((time.perf_counter() - turn.started) * 1000)
    meta["llm_ms"] = round(generated.llm_ms + meta.get("reformulation_ms", 0.0), 1)
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
    events_service.publish(
        components.publisher, events_service.RESPONSE_GENERATED, turn.user_id, payload
    )
    logger.info(
        "answer chat=%s grounded=%s reason=%s sources=%d latency_ms=%d",
        turn.chat_id,
        meta["grounded"],
        meta.get("reason"),
        len(sources or []),
        latency_ms,
    )
    return saved


async def send(
    session: AsyncSession, components: Components, user: User, request: MessageCreate
) -> MessageExchange:
    turn = await start_turn(session, components, user, request)
    plan = await plan_answer(components, turn)
    generated: Generated | None = None
    async for item in produce(components, turn, plan, streaming=False):
        if isinstance(item, Generated):
            generated = item
    assert generated is not None
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
    user_message = turn.user_message.model_dump(mode="json")
    yield sse("meta", {"chat_id": turn.chat_id, "user_message": user_message})
    try:
        plan = await plan_answer(components, turn)
        generated: Generated | None = None
        async for item in produce(components, turn, plan, streaming=True):
            if isinstance(item, SourcesReady):
                sources = [source.model_dump(mode="json") for source in plan.candidates]
                yield sse("sources", {"sources": sources, **plan.meta})
            elif isinstance(item, Generated):
                generated = item
            elif item:
                yield sse("delta", {"text": item})
        assert generated is not None
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
