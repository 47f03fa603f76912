"""The message flow: a user's message in, a grounded (or general) answer out.

Three phases, so that no database connection is held while the model thinks and the user's
message survives a model failure:
1. `turns.start_turn` (request session, committed): chat, user message, scope, history.
2. the answer engine (no database): the prompt, the model (with tools if asked), citations.
3. `_save_answer` (fresh session): the assistant message and the analytics event.
`send` runs them for a whole answer; `stream` yields Server-Sent Events along the way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

import anyio
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.answers.engine import AnswerEngine, AnswerOptions, Generated, Plan, SourcesReady
from docchat.answers.meta import Scope
from docchat.chats import repository
from docchat.chats.schemas import (
    MessageCreate,
    MessageExchange,
    MessageRead,
    StreamDelta,
    StreamDone,
    StreamError,
    StreamMeta,
    StreamSources,
)
from docchat.chats.turns import ScopeRead, Turn, searches_as_worded, start_turn
from docchat.config import Settings
from docchat.documents.storage import FileStorage
from docchat.events import service as events_service
from docchat.events.publisher import EventPublisher
from docchat.kit.errors import DocchatError
from docchat.kit.tokens import estimate_tokens
from docchat.quotas import service as quotas
from docchat.retrieval.index import DocumentScope
from docchat.users.models import User

logger = logging.getLogger(__name__)


def sse(event: str, data: BaseModel) -> str:
    return f"event: {event}\ndata: {json.dumps(data.model_dump(mode='json'))}\n\n"


@dataclass(frozen=True)
class MessageFlow:
    """What the chat routes need to answer a message, and nothing else."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    engine: AnswerEngine
    storage: FileStorage
    publisher: EventPublisher

    async def start(self, session: AsyncSession, user: User, request: MessageCreate) -> Turn:
        hold = await quotas.hold_tokens(
            session,
            user,
            self.settings.quota,
            tokens=quotas.answer_tokens(self.settings, request.content),
            release_with=self.sessionmaker,
        )
        try:
            turn = await self._start(session, user, request)
        except BaseException:
            await hold.release()
            raise
        return dataclasses.replace(turn, hold=hold)

    async def _start(self, session: AsyncSession, user: User, request: MessageCreate) -> Turn:
        ahead: ScopeRead | None = None
        if searches_as_worded(self.settings, request):
            # The query's embedding runs while the turn's chat and scope are read, and its
            # search while the turn is saved.
            self.engine.anticipate_search(request.content)

            def ahead(scope: Scope, documents: DocumentScope, options: AnswerOptions) -> None:
                if self.settings.rag.search_ahead:
                    self.engine.search_ahead(request.content, scope, documents, options)

        turn = await start_turn(session, self.settings, self.storage, user, request, on_scope=ahead)
        payload = {"chat_id": str(turn.chat_id), "model": turn.question.options.model}
        events_service.publish(self.publisher, events_service.QUERY_SUBMITTED, user.id, payload)
        return turn

    async def _save_answer(
        self, turn: Turn, plan: Plan, generated: Generated, *, stopped: bool = False
    ) -> MessageRead:
        cited = self.engine.cite(turn.question, plan, generated.content, stopped=stopped)
        meta = cited.meta
        meta.llm_ms = generated.llm_ms
        meta.stopped = stopped or None
        latency_ms = int((time.perf_counter() - turn.started) * 1000)
        sources = cited.sources
        payload = {
            "chat_id": str(turn.chat_id),
            "model": generated.model,
            "latency_ms": latency_ms,
            "citation_count": len(sources or []),
            "retrieval_count": meta.retrieval_count or 0,
            "grounded": meta.grounded,
            "prompt_tokens": generated.prompt_tokens,
            "completion_tokens": generated.completion_tokens,
            **({"tokens_estimated": True} if generated.tokens_estimated else {}),
        }
        async with self.sessionmaker() as session:
            if turn.replaces_from_seq is not None:
                await repository.remove_messages(
                    session,
                    turn.chat_id,
                    from_seq=turn.replaces_from_seq,
                    before_seq=turn.question_seq,
                )
            if turn.retitle is not None:
                old, new = turn.retitle
                await repository.retitle(session, turn.chat_id, old=old, new=new)
            message = await repository.add_answer(
                session,
                turn.chat_id,
                content=cited.content,
                sources=[source.model_dump(mode="json") for source in sources] if sources else None,
                model=generated.model,
                latency_ms=latency_ms,
                prompt_tokens=generated.prompt_tokens,
                completion_tokens=generated.completion_tokens,
                meta=meta.model_dump(mode="json"),
            )
            await events_service.record(
                session, events_service.RESPONSE_GENERATED, turn.user_id, payload
            )
            saved = MessageRead.model_validate(message)
            await session.commit()
        events_service.publish(
            self.publisher, events_service.RESPONSE_GENERATED, turn.user_id, payload
        )
        logger.info(
            "answer chat=%s grounded=%s reason=%s sources=%d latency_ms=%d",
            turn.chat_id,
            meta.grounded,
            meta.reason,
            len(sources or []),
            latency_ms,
        )
        return saved

    async def send(
        self, session: AsyncSession, user: User, request: MessageCreate
    ) -> MessageExchange:
        turn = await self.start(session, user, request)
        try:
            plan = await self.engine.plan(turn.question)
            generated: Generated | None = None
            async for item in self.engine.produce(turn.question, plan, streaming=False):
                if isinstance(item, Generated):
                    generated = item
            assert generated is not None
            answer = await self._save_answer(turn, plan, generated)
        finally:
            await turn.hold.release()
        return MessageExchange(
            chat_id=turn.chat_id, user_message=turn.user_message, assistant_message=answer
        )

    async def stream(self, turn: Turn) -> AsyncIterator[str]:
        """Server-Sent Events for a started turn: meta, sources, delta..., then done or error.

        A model failure saves no answer. A reader who stops the answer (closes the connection)
        keeps what they were shown: it is saved, marked `stopped`."""
        events = self._stream(turn)
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()  # a reader who went away: the stopped answer is kept there
            await turn.hold.release()

    async def _stream(self, turn: Turn) -> AsyncGenerator[str, None]:
        yield sse("meta", StreamMeta(chat_id=turn.chat_id, user_message=turn.user_message))
        plan: Plan | None = None
        shown: list[str] = []
        try:
            plan = await self.engine.plan(turn.question)
            generated: Generated | None = None
            async for item in self.engine.produce(turn.question, plan, streaming=True):
                if isinstance(item, SourcesReady):
                    sources = StreamSources(**plan.meta.model_dump(), sources=plan.candidates)
                    yield sse("sources", sources)
                elif isinstance(item, Generated):
                    generated = item
                elif item:
                    shown.append(item)
                    yield sse("delta", StreamDelta(text=item))
            assert generated is not None
            answer = await self._save_answer(turn, plan, generated)
        except DocchatError as exc:
            logger.warning("streamed answer for chat %s failed: %s", turn.chat_id, exc.message)
            yield sse("error", StreamError(detail=exc.message, status=exc.status_code))
            return
        except Exception:
            logger.exception("streamed answer for chat %s failed", turn.chat_id)
            yield sse("error", StreamError(detail="Internal server error", status=500))
            return
        except (asyncio.CancelledError, GeneratorExit):
            # The client went away: Starlette cancels this generator, or closes it.
            if plan is not None and shown:
                await self._keep_stopped_answer(turn, plan, "".join(shown))
            raise
        yield sse("done", StreamDone(assistant_message=answer))

    async def _keep_stopped_answer(self, turn: Turn, plan: Plan, text: str) -> None:
        """Save the part of an answer the reader saw before stopping it.

        The model never reported usage for the cut call, so its tokens are estimated (quotas
        must count them all the same). Shielded: the request's own scope is being cancelled."""
        usage = plan.usage
        prompt = sum(estimate_tokens(str(item.get("content") or "")) for item in plan.messages)
        generated = Generated(
            content=text,
            model=turn.question.options.model,
            prompt_tokens=(usage.prompt_tokens or 0) + prompt,
            completion_tokens=(usage.completion_tokens or 0) + estimate_tokens(text),
            llm_ms=usage.llm_ms,
            tokens_estimated=True,
        )
        with anyio.CancelScope(shield=True):
            try:
                await self._save_answer(turn, plan, generated, stopped=True)
            except Exception:
                logger.exception("the stopped answer for chat %s was not saved", turn.chat_id)
