"""The message flow: a user's message in, a grounded (or general) answer out.

Three phases, so that no database connection is held while the model thinks and the user's
message survives a model failure:
1. `turns.start_turn` (request session, committed): chat, user message, the answer's row
   (`streaming`), scope, history.
2. the answer engine (no database): the prompt, the model (with tools if asked), citations.
3. `_save_answer` (fresh session): the finished answer over its row, and the analytics event.

Phases 2 and 3 run as a task of their own (`launch`), not in the request: an answer goes on
when its reader goes away, until it is finished, stopped (`stop`, from any process), or over
`ANSWER_TIMEOUT_SECONDS`. Readers follow it through `progress` (`follow`); `send` waits for
it whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.answers.cache import AnswerCache, worth_keeping
from docchat.answers.engine import AnswerEngine
from docchat.answers.meta import ResearchStep, Scope
from docchat.answers.values import AnswerOptions, CitedAnswer, Generated, Plan, SourcesReady
from docchat.chats import repository
from docchat.chats import service as chats_service
from docchat.chats.history import Relevance
from docchat.chats.models import Message, MessageStatus
from docchat.chats.progress import ENDED_WITHOUT_TEXT, End, Progress, follow_stored
from docchat.chats.schemas import (
    MessageCreate,
    MessageExchange,
    MessageRead,
    StreamDone,
    StreamError,
    StreamMeta,
    StreamSources,
    StreamStep,
)
from docchat.chats.summaries import Summaries, fold_batch
from docchat.chats.turns import ScopeRead, Turn, searches_as_worded, start_turn
from docchat.config import Settings
from docchat.documents.storage import FileStorage
from docchat.events import service as events_service
from docchat.events.publisher import EventPublisher
from docchat.kit.errors import DocchatError, NotFound
from docchat.kit.tokens import estimate_tokens
from docchat.quotas import service as quotas
from docchat.replicas.routing import ReadRouter
from docchat.retrieval.index import DocumentScope
from docchat.users.models import User

logger = logging.getLogger(__name__)

UNEXPECTED_FAILURE = (
    "Something went wrong while writing this answer. Your question is kept: try again, and "
    "tell your administrator if it keeps happening."
)
# How long a Stop waits for the answer to be saved as far as it got.
STOP_WAIT_SECONDS = 10.0

StopReason = Literal["stop", "timeout", "shutdown"]


@dataclass
class Run:
    """One answer being written in this process."""

    turn: Turn
    progress: Progress
    plan: Plan | None = None
    generation: asyncio.Task[Generated] | None = None
    task: asyncio.Task[End] | None = None
    # Saves the text so far and heeds stops while the model writes (`MessageFlow._watch`),
    # until `written` is set.
    watcher: asyncio.Task[None] | None = None
    written: asyncio.Event = field(default_factory=asyncio.Event)
    stopped_by: StopReason | None = None
    # What made it fail, for `send` to raise as the HTTP error.
    failure: DocchatError | None = None

    def stop(self, reason: StopReason) -> None:
        if self.stopped_by is None and self.generation is not None and not self.generation.done():
            self.stopped_by = reason
            self.generation.cancel()

    async def stop_watching(self) -> None:
        """End the progress saves before the answer's last write: one still under way would
        race it (and could write a draft after the answer). A save is let finish, never cut
        in the middle of its transaction."""
        self.written.set()
        if self.watcher is None:
            return
        await asyncio.wait({self.watcher})
        failure = None if self.watcher.cancelled() else self.watcher.exception()
        if failure is not None:  # the answer stands; only a draft of it was not saved
            logger.warning("saving the answer's progress failed", exc_info=failure)


@dataclass(frozen=True)
class MessageFlow:
    """What the chat routes need to answer a message, and nothing else."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    engine: AnswerEngine
    storage: FileStorage
    publisher: EventPublisher
    summaries: Summaries
    # Chooses the earlier exchanges a long chat's question remembers; None: the latest ones.
    relevance: Relevance | None = None
    # Reuses answers (RAG_ANSWER_CACHE); None: never.
    cache: AnswerCache | None = None
    # Where a question's reads run (a read replica, or the primary); None: the primary.
    reads: ReadRouter | None = None
    # The answers this process is writing, by their message id.
    runs: dict[uuid.UUID, Run] = field(default_factory=dict)

    async def start(self, session: AsyncSession, user: User, request: MessageCreate) -> Turn:
        hold = await quotas.hold_tokens(
            session,
            user,
            self.settings.quota,
            tokens=quotas.answer_tokens(request.content, self.settings.search, self.settings.llm),
            release_with=self.sessionmaker,
        )
        try:
            turn = await self._start(session, user, request)
        except BaseException:
            await hold.release()
            raise
        return dataclasses.replace(turn, hold=hold)

    async def _start(self, session: AsyncSession, user: User, request: MessageCreate) -> Turn:
        if self.reads is not None:  # before the search that starts ahead of the turn
            await self.reads.begin(session)
        ahead: ScopeRead | None = None
        # A message over the length limit is refused before anything is searched.
        within_limit = len(request.content) <= self.settings.max_message_chars
        if within_limit and searches_as_worded(self.settings.search, request):
            # The query's embedding runs while the turn's chat and scope are read, and its
            # search while the turn is saved.
            self.engine.anticipate_search(request.content)

            def ahead(scope: Scope, documents: DocumentScope, options: AnswerOptions) -> None:
                if self.settings.search.search_ahead:
                    self.engine.search_ahead(request.content, scope, documents, options)

        turn = await start_turn(
            session,
            self.settings,
            self.storage,
            user,
            request,
            on_scope=ahead,
            relevance=self.relevance,
        )
        payload = {"chat_id": str(turn.chat_id), "model": turn.question.options.model}
        events_service.publish(self.publisher, events_service.QUERY_SUBMITTED, user.id, payload)
        return turn

    async def _save_answer(
        self, turn: Turn, plan: Plan, generated: Generated, *, stopped: bool = False
    ) -> MessageRead:
        cited = self.engine.cite(turn.question, plan, generated.content, stopped=stopped)
        cited.meta.llm_ms = generated.llm_ms
        cited.meta.stopped = stopped or None
        latency_ms = int((time.perf_counter() - turn.started) * 1000)
        payload = _response_event(turn, cited, generated, latency_ms)
        async with self.sessionmaker() as session:
            message = await _stored_answer(session, turn, cited, generated, latency_ms)
            await _tidy_chat(session, turn)
            events_service.add(session, events_service.RESPONSE_GENERATED, turn.user_id, payload)
            saved = await _as_read(session, turn, message)
            await session.commit()
        events_service.publish(
            self.publisher, events_service.RESPONSE_GENERATED, turn.user_id, payload
        )
        self._remember(turn, saved)
        logger.info(
            "answer chat=%s grounded=%s reason=%s sources=%d latency_ms=%d",
            turn.chat_id,
            cited.meta.grounded,
            cited.meta.reason,
            len(cited.sources or []),
            latency_ms,
        )
        return saved

    def _remember(self, turn: Turn, saved: MessageRead) -> None:
        """Bring the chat's memory up to date with the saved answer, in the background.

        A chat within its window has nothing to summarise and no exchange to choose among:
        no read and no embedding for it (most chats are short). Past it, the summary is
        brought up to date once enough exchanges have left the window (`fold_batch`).
        An edit or regeneration that took the summary back is folded again at once."""
        exchanges = turn.exchanges_before + 1
        leaving = turn.unsummarised_before + 1 - turn.remembers
        restarted = turn.replaces_from_seq is not None and exchanges > turn.remembers
        if turn.remembers > 0 and (restarted or leaving >= fold_batch(turn.remembers)):
            self.summaries.after_answer(turn.chat_id, turn.question.options.model)
        if self.relevance is not None and exchanges >= turn.remembers > 0:
            self.relevance.remember(turn.question.text, saved.content, turn.earlier_exchanges)

    async def send(
        self, session: AsyncSession, user: User, request: MessageCreate
    ) -> MessageExchange:
        """Ask and wait for the whole answer (it is written all the same if the caller goes)."""
        run = self.launch(await self.start(session, user, request))
        assert run.task is not None
        end = await asyncio.shield(run.task)
        if isinstance(end, StreamError):
            raise run.failure or DocchatError(end.detail)
        return MessageExchange(
            chat_id=run.turn.chat_id,
            user_message=run.turn.user_message,
            assistant_message=end.assistant_message,
        )

    def launch(self, turn: Turn) -> Run:
        """Write the started turn's answer in a task of its own: readers come and go."""
        meta = StreamMeta(
            chat_id=turn.chat_id,
            user_message=turn.user_message,
            assistant_message_id=turn.answer_id,
        )
        run = Run(turn=turn, progress=Progress(meta=meta))
        run.generation = asyncio.create_task(self._generate(run))
        run.task = asyncio.create_task(self._run(run))
        self.runs[turn.answer_id] = run
        return run

    async def follow(
        self, session: AsyncSession, user: User, answer_id: uuid.UUID, offset: int
    ) -> AsyncIterator[str]:
        """Server-Sent Events of one of the user's answers from `offset` on, wherever it is
        written; 404 (before any event) if it is not theirs."""
        run = self.runs.get(answer_id)
        if run is not None and run.turn.user_id == user.id:
            return run.progress.follow(offset)
        answer = await repository.get_owned_answer(session, user.id, answer_id)
        if answer is None:
            raise NotFound("No such answer")
        return follow_stored(
            self.sessionmaker,
            user.id,
            answer,
            offset,
            progress_seconds=self.settings.answer_progress_seconds,
        )

    async def stop(self, session: AsyncSession, user: User, answer_id: uuid.UUID) -> None:
        """Stop one of the user's answers where it is, on whichever process writes it; it is
        kept as far as it got. Stopping a finished answer changes nothing."""
        run = self.runs.get(answer_id)
        if run is not None and run.turn.user_id == user.id and run.task is not None:
            run.stop("stop")
            await asyncio.wait({run.task}, timeout=STOP_WAIT_SECONDS)
            return
        user_id = user.id
        answer = await repository.get_owned_answer(session, user_id, answer_id)
        if answer is None:
            raise NotFound("No such answer")
        if not await repository.request_stop(session, answer_id):
            return
        await session.commit()
        # Another process writes it: it reads the request at its next save of progress.
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while time.monotonic() < deadline:
            await asyncio.sleep(self.settings.answer_progress_seconds / 2)
            answer = await repository.get_owned_answer(session, user_id, answer_id)
            await session.commit()  # no transaction left open between looks
            if answer is None or answer.status != MessageStatus.streaming:
                return

    async def close(self) -> None:
        """At shutdown: every answer still being written is stopped and kept as far as it got."""
        for run in list(self.runs.values()):
            run.stop("shutdown")
        tasks = [run.task for run in self.runs.values() if run.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_SECONDS)
        await self.summaries.close()

    async def _generate(self, run: Run) -> Generated:
        turn = run.turn
        plan = run.plan = await self.engine.plan(turn.question)
        # Regenerating asks for another answer than the one there: never a reused one.
        regenerating = turn.keeps_answer_id is not None or turn.replaces_from_seq is not None
        key = (
            self.cache.key(turn.user_id, turn.question, plan)
            if self.cache is not None and not regenerating
            else None
        )
        if key is not None:
            reused = await self._reused(run, plan, key)
            if reused is not None:
                return reused
        generated = await self._written(run, plan)
        if key is not None and self.cache is not None and generated.content and worth_keeping(plan):
            try:
                await self.cache.keep(
                    turn.user_id, key, turn.question.text, generated.content, generated.model
                )
            except Exception:  # the answer stands; only its reuse is lost
                logger.exception("the answer for chat %s was not cached", turn.chat_id)
        return generated

    async def _reused(self, run: Run, plan: Plan, key: bytes) -> Generated | None:
        """The cached answer for this question and prompt, given as this run's text."""
        assert self.cache is not None
        try:
            reused = await self.cache.find(run.turn.user_id, key, run.turn.question.text)
        except Exception:  # the model answers instead
            logger.exception("the answer cache could not be read for chat %s", run.turn.chat_id)
            return None
        if reused is None:
            return None
        plan.meta.cached = True
        run.progress.add_sources(StreamSources(**plan.meta.model_dump(), sources=plan.candidates))
        run.progress.add_text(reused.content)
        return Generated(
            content=reused.content, model=reused.model, prompt_tokens=0, completion_tokens=0
        )

    async def _written(self, run: Run, plan: Plan) -> Generated:
        turn, progress = run.turn, run.progress
        generated: Generated | None = None
        async for item in self.engine.produce(turn.question, plan, streaming=True):
            if isinstance(item, ResearchStep):
                progress.add_step(StreamStep(**item.model_dump()))
            elif isinstance(item, SourcesReady):
                progress.add_sources(
                    StreamSources(**plan.meta.model_dump(), sources=plan.candidates)
                )
            elif isinstance(item, Generated):
                generated = item
            elif item:
                progress.add_text(item)
        assert generated is not None
        return generated

    async def _run(self, run: Run) -> End:
        run.watcher = asyncio.create_task(self._watch(run))
        try:
            end = await self._answer(run)
        finally:
            await run.stop_watching()
            await run.turn.hold.release()
            self.runs.pop(run.turn.answer_id, None)
        run.progress.finish(end)
        return end

    async def _answer(self, run: Run) -> End:
        turn = run.turn
        assert run.generation is not None
        try:
            generated = await run.generation
            assert run.plan is not None
            await run.stop_watching()
            return StreamDone(assistant_message=await self._save_answer(turn, run.plan, generated))
        except asyncio.CancelledError:
            if run.stopped_by is None:
                raise  # not a Stop: this task itself is being cancelled
            await run.stop_watching()
            return await self._keep_stopped_answer(run)
        except DocchatError as exc:
            logger.warning("the answer for chat %s failed: %s", turn.chat_id, exc.message)
            run.failure = exc
            await run.stop_watching()
            await self._discard(turn)
            return StreamError(detail=exc.message, status=exc.status_code)
        except Exception:
            logger.exception("the answer for chat %s failed", turn.chat_id)
            await run.stop_watching()
            await self._discard(turn)
            return StreamError(detail=UNEXPECTED_FAILURE, status=500)

    async def _watch(self, run: Run) -> None:
        """Every `ANSWER_PROGRESS_SECONDS`: save the text so far (what readers on other
        processes see, and a sign of life), heed a Stop sent to another process, and stop the
        answer at its time limit."""
        every, limit = self.settings.answer_progress_seconds, self.settings.answer_timeout_seconds
        sources_saved = False  # the passages are written once, not with every save of the text
        steps_saved = 0
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.written.wait(), every)
            if run.written.is_set():
                return
            if time.perf_counter() - run.turn.started > limit:
                logger.warning("the answer for chat %s reached its time limit", run.turn.chat_id)
                run.stop("timeout")
                return
            progress = run.progress
            sources = None if sources_saved else progress.sources
            sources_saved = sources_saved or sources is not None
            meta = sources.model_dump(mode="json", exclude={"sources"}) if sources else None
            if meta is None and len(progress.steps) > steps_saved:
                meta = {"research_steps": [step.model_dump(mode="json") for step in progress.steps]}
            steps_saved = len(progress.steps)
            async with self.sessionmaker() as session:
                stop = await repository.record_progress(
                    session,
                    run.turn.answer_id,
                    content=progress.text,
                    sources=[s.model_dump(mode="json") for s in sources.sources]
                    if sources
                    else None,
                    meta=meta,
                )
                await session.commit()
            if stop:
                run.stop("stop")
                return

    async def _keep_stopped_answer(self, run: Run) -> End:
        """Save the part of an answer written before it was stopped (none: drop its row).

        The model never reported usage for the cut call, so its tokens are estimated (quotas
        must count them all the same)."""
        turn, plan, text = run.turn, run.plan, run.progress.text
        if plan is None or not text:
            await self._discard(turn)
            return ENDED_WITHOUT_TEXT
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
        saved = await self._save_answer(turn, plan, generated, stopped=True)
        return StreamDone(assistant_message=saved)

    async def _discard(self, turn: Turn) -> None:
        try:
            async with self.sessionmaker() as session:
                await repository.discard_answer(session, turn.answer_id)
                await session.commit()
        except Exception:
            logger.exception("the unfinished answer of chat %s was not removed", turn.chat_id)


def _response_event(
    turn: Turn, cited: CitedAnswer, generated: Generated, latency_ms: int
) -> dict[str, object]:
    """The analytics event of a saved answer."""
    return {
        "chat_id": str(turn.chat_id),
        "model": generated.model,
        "latency_ms": latency_ms,
        "citation_count": len(cited.sources or []),
        "retrieval_count": cited.meta.retrieval_count or 0,
        "grounded": cited.meta.grounded,
        "prompt_tokens": generated.prompt_tokens,
        "completion_tokens": generated.completion_tokens,
        **({"tokens_estimated": True} if generated.tokens_estimated else {}),
    }


async def _stored_answer(
    session: AsyncSession, turn: Turn, cited: CitedAnswer, generated: Generated, latency_ms: int
) -> Message:
    """The finished answer written over its row (and kept as a version of the answer it
    replaces). Saved first: an edit sent meanwhile may have removed its row (a new one is
    made), and the earlier answer becomes a version of whichever row holds it."""
    sources = cited.sources
    message = await repository.complete_answer(
        session,
        turn.chat_id,
        turn.answer_id,
        content=cited.content,
        sources=[source.model_dump(mode="json") for source in sources] if sources else None,
        model=generated.model,
        latency_ms=latency_ms,
        prompt_tokens=generated.prompt_tokens,
        completion_tokens=generated.completion_tokens,
        meta=cited.meta.model_dump(mode="json"),
    )
    if turn.keeps_answer_id is not None:
        await repository.keep_as_version(
            session, earlier_answer_id=turn.keeps_answer_id, latest_answer_id=message.id
        )
    return message


async def _as_read(session: AsyncSession, turn: Turn, message: Message) -> MessageRead:
    """The saved answer as the API shows it, with the versions it keeps."""
    saved = MessageRead.model_validate(message)
    if turn.keeps_answer_id is not None:
        versions = await chats_service.earlier_versions(session, [message.id])
        saved.versions = versions.get(message.id, [])
    return saved


async def _tidy_chat(session: AsyncSession, turn: Turn) -> None:
    """What the turn changes in its chat besides the answer: the messages an edit replaces
    (and the summary of them), the title an edit of the first question renames."""
    if turn.replaces_from_seq is not None:
        await repository.remove_messages(
            session, turn.chat_id, from_seq=turn.replaces_from_seq, before_seq=turn.question_seq
        )
        await repository.forget_summary(session, turn.chat_id, from_seq=turn.replaces_from_seq)
    if turn.retitle is not None:
        old, new = turn.retitle
        await repository.retitle(session, turn.chat_id, old=old, new=new)
