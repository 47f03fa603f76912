"""The running summary of a chat: the exchanges its questions no longer send whole, folded in.

After an answer is saved, once `fold_batch` exchanges have left the chat's history window (all
but its last `history_pairs`) without being in the summary, they are folded into it, in the
background:
never on a question's path, and with no database connection held while the model writes.
`chats.summary_through_seq` marks how far the summary goes, so each fold reads only what is
new; an edit or regeneration that removes summarised messages starts it over
(`repository.forget_summary`), and the next fold writes it again from the start.

With a connected model the chat's model rewrites the summary. The built-in demo model is too
small to summarise, so it keeps a digest instead: each exchange as its question and the
sentence of its answer that shares most of the question's words, the latest kept when they no
longer fit.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.chats import repository
from docchat.chats.history import Exchange, exchanges_of, remembered, term_share
from docchat.chats.models import Chat
from docchat.config import HistorySettings
from docchat.events import service as events_service
from docchat.extraction.structure import short
from docchat.kit.errors import DocchatError
from docchat.kit.tokens import CHARS_PER_TOKEN, estimate_tokens
from docchat.llm import prompts
from docchat.llm.client import LLM
from docchat.retrieval.highlight import terms

logger = logging.getLogger(__name__)

# Exchanges read per fold: a long chat's first fold goes in several steps.
FOLD_EXCHANGES = 30
# Each message as the summariser reads it.
TRANSCRIPT_MESSAGE_CHARS = 1500
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def fold_batch(window: int) -> int:
    """How many exchanges must have left a chat's window before its summary is written again:
    half the window, so that a model writes a long chat's summary once every few answers,
    not after each. Those waiting stay within reach of the question's relevance
    (`history.Relevance` reads a hundred earlier exchanges)."""
    return max(1, window // 2)


def history_pairs(chat: Chat, settings: HistorySettings) -> int:
    """How many earlier exchanges the chat's questions send whole (its own number, within the
    server's limit even if that was lowered since)."""
    own = settings.max_history_pairs if chat.history_pairs is None else chat.history_pairs
    return min(own, settings.history_pairs_limit)


def transcript(exchanges: Sequence[Exchange]) -> str:
    lines: list[str] = []
    for exchange in exchanges:
        lines.append(f"User: {exchange.question.content[:TRANSCRIPT_MESSAGE_CHARS]}")
        if exchange.answer is not None:
            lines.append(f"Assistant: {remembered(exchange.answer)[:TRANSCRIPT_MESSAGE_CHARS]}")
    return "\n".join(lines)


def digest_line(exchange: Exchange) -> str:
    """One exchange as the demo model's digest keeps it: the question, and the sentence of the
    answer that shares most of its terms (the first on a tie: a quoted answer often quotes a
    whole passage, whose first sentence is not the one asked about)."""
    question = exchange.question.content
    line = f"- Asked: {short(question, 160)}"
    if exchange.answer is not None:
        sentences = [s for s in _SENTENCE_END.split(remembered(exchange.answer).strip()) if s]
        if sentences:
            wanted = set(terms(question))
            best = max(sentences, key=lambda sentence: term_share(wanted, sentence))
            line += f" Answer: {short(best, 240)}"
    return line


def digest(previous: str | None, exchanges: Sequence[Exchange], *, limit_chars: int) -> str:
    """The digest with these exchanges added; the oldest lines go when it is too long."""
    lines = (previous.splitlines() if previous else []) + [digest_line(e) for e in exchanges]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if kept and size + len(line) + 1 > limit_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(reversed(kept))


@dataclass
class Summaries:
    """Folds chats' old exchanges into their summaries, one background task per chat."""

    settings: HistorySettings
    # The built-in demo model is too small to summarise: a digest is kept instead.
    builtin_model: bool
    sessionmaker: async_sessionmaker[AsyncSession]
    llm: LLM
    _tasks: dict[uuid.UUID, asyncio.Task[None]] = field(default_factory=dict)
    # Chats answered again while their fold ran: folded once more when it ends.
    _again: set[uuid.UUID] = field(default_factory=set)

    def after_answer(self, chat_id: uuid.UUID, model: str) -> None:
        """Bring the chat's summary up to date in the background (call from the event loop)."""
        if not self.settings.summarise_history:
            return
        if chat_id in self._tasks:
            self._again.add(chat_id)
            return
        task = asyncio.create_task(self._fold_all(chat_id, model))
        self._tasks[chat_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(chat_id, None))

    async def wait(self) -> None:
        """Until every fold under way has ended (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks.values()))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _fold_all(self, chat_id: uuid.UUID, model: str) -> None:
        try:
            while await self.fold(chat_id, model) or chat_id in self._again:
                self._again.discard(chat_id)
        except Exception:  # a summary is never worth failing anything else for
            logger.exception("summary of chat %s failed; the next answer tries again", chat_id)

    async def fold(self, chat_id: uuid.UUID, model: str) -> bool:
        """Fold the next exchanges that left the chat's window into its summary. True when
        something was folded (there may be more)."""
        async with self.sessionmaker() as session:
            chat = await repository.get_live(session, chat_id)
            if chat is None:
                return False
            window = history_pairs(chat, self.settings)
            if window == 0:
                return False  # a chat that remembers nothing is not summarised either
            read, owner_id = repository.SummaryState.of(chat), chat.owner_id
            messages = await repository.messages_after(
                session,
                chat_id,
                after_seq=read.through_seq,
                limit=2 * (FOLD_EXCHANGES + window) + 1,
            )
            await session.commit()  # nothing held while the model writes
        # Counted as the history counts them: a question whose answer was lost is one too.
        exchanges = exchanges_of(messages)
        leaving = exchanges[: max(len(exchanges) - window, 0)][:FOLD_EXCHANGES]
        if not leaving:
            return False
        written = await self._written(read.summary, leaving, model)
        if written is None:
            return False
        summary, tokens = written
        last = leaving[-1].answer or leaving[-1].question
        async with self.sessionmaker() as session:
            saved = await repository.save_summary(
                session, chat_id, read, summary=summary, through_seq=last.seq
            )
            if tokens is not None:
                await events_service.record(
                    session,
                    events_service.SUMMARY_WRITTEN,
                    owner_id,
                    {"chat_id": str(chat_id), "model": model, **tokens},
                )
            await session.commit()
        return saved

    async def _written(
        self, previous: str | None, leaving: Sequence[Exchange], model: str
    ) -> tuple[str, dict[str, int] | None] | None:
        """The new summary, and the model's tokens for it (they count toward the chat owner's
        quota; None for the demo model's digest); None when the model failed."""
        limit = self.settings.summary_tokens
        if self.builtin_model:
            return digest(previous, leaving, limit_chars=limit * CHARS_PER_TOKEN), None
        messages = prompts.summary_messages(
            previous, transcript(leaving), words=max(limit * 3 // 4, 30)
        )
        try:
            reply = await self.llm.complete(messages, model=model, max_tokens=limit, temperature=0)
        except DocchatError as exc:
            logger.warning("the model could not summarise a chat (kept as it was): %s", exc)
            return None
        text = reply.content.strip()[: limit * CHARS_PER_TOKEN]
        if not text:
            return None
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(estimate_tokens(str(m["content"])) for m in messages)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = estimate_tokens(text)
        return text, {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
