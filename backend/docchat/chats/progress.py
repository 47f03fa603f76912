"""How far an answer has got, told as Server-Sent Events to any number of readers.

An answer is written apart from the request that asked for it (`flow.MessageFlow`), so a
reader may come and go: the asking request, another tab, the same page after a reload or a
network drop, or a client of another API process. Each reader says where it got to (the
`Last-Event-ID` of its last event, or `?offset=`): a character offset into the answer's text.
It is told the `meta` event, a research answer's `step` events and the `sources` event again,
then the text from that offset, then `done` or `error`.

- In the process writing the answer, readers follow its `Progress` (no database round trip).
- Elsewhere they follow the answer's row, which the writing process updates every
  `ANSWER_PROGRESS_SECONDS`; a row its process stopped updating is ended as interrupted.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.chats import repository
from docchat.chats import service as chats_service
from docchat.chats.models import Message, MessageStatus
from docchat.chats.schemas import (
    MessageRead,
    StreamDelta,
    StreamDone,
    StreamError,
    StreamMeta,
    StreamSources,
    StreamStep,
)

# A comment line now and then keeps proxies from closing a quiet stream (a slow model).
KEEP_ALIVE_SECONDS = 15.0
# A row not updated for this many progress intervals belongs to a process that went away.
SILENT_INTERVALS = 20
SILENT_FLOOR_SECONDS = 30.0

ENDED_WITHOUT_TEXT = StreamError(
    detail="This answer ended before its first word (it was stopped or failed); the question "
    "is kept, so you can ask it again.",
    status=410,
)

End = StreamDone | StreamError


def sse(event: str, data: BaseModel, *, offset: int | None = None) -> str:
    """One event; `offset` (the characters of the answer sent so far) becomes its id, which
    a browser sends back as `Last-Event-ID` when it reconnects."""
    ident = "" if offset is None else f"id: {offset}\n"
    return f"{ident}event: {event}\ndata: {json.dumps(data.model_dump(mode='json'))}\n\n"


def silent_after(progress_seconds: float) -> float:
    return max(SILENT_FLOOR_SECONDS, SILENT_INTERVALS * progress_seconds)


@dataclass
class Progress:
    """An answer being written in this process: its text so far, and a signal to wake its
    readers on each change."""

    meta: StreamMeta
    steps: list[StreamStep] = field(default_factory=list)
    sources: StreamSources | None = None
    text: str = ""
    end: End | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def add_step(self, step: StreamStep) -> None:
        self.steps.append(step)
        self._signal()

    def add_sources(self, sources: StreamSources) -> None:
        self.sources = sources
        self._signal()

    def add_text(self, piece: str) -> None:
        self.text += piece
        self._signal()

    def finish(self, end: End) -> None:
        self.end = end
        self._signal()

    def _signal(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def follow(self, offset: int) -> AsyncIterator[str]:
        offset = min(max(offset, 0), len(self.text))
        yield sse("meta", self.meta, offset=offset)
        told_sources, told_steps = False, 0
        while True:
            changed = self._changed
            for step in self.steps[told_steps:]:
                yield sse("step", step, offset=offset)
            told_steps = len(self.steps)
            if self.sources is not None and not told_sources:
                told_sources = True
                yield sse("sources", self.sources, offset=offset)
            if len(self.text) > offset:
                piece, offset = self.text[offset:], len(self.text)
                yield sse("delta", StreamDelta(text=piece), offset=offset)
            if self.end is not None:
                yield sse("done" if isinstance(self.end, StreamDone) else "error", self.end)
                return
            try:
                await asyncio.wait_for(changed.wait(), KEEP_ALIVE_SECONDS)
            except TimeoutError:
                yield ": keep-alive\n\n"


def stored_steps(row: Message) -> list[StreamStep]:
    """The research steps an answer's row holds so far (saved with its progress)."""
    steps = (row.meta or {}).get("research_steps") or []
    return [StreamStep.model_validate(step) for step in steps if isinstance(step, dict)]


async def _read_stored(
    session: AsyncSession, user_id: uuid.UUID, answer_id: uuid.UUID, silent_seconds: float
) -> Message | None:
    """The answer's row, first ending it as interrupted if its process went silent."""
    if await repository.went_silent(session, answer_id, silent_seconds):
        await repository.end_abandoned_answers(
            session, silent_for_seconds=silent_seconds, answer_id=answer_id
        )
        await session.commit()
    return await repository.get_owned_answer(session, user_id, answer_id)


async def follow_stored(
    sessionmaker: async_sessionmaker[AsyncSession],
    user_id: uuid.UUID,
    answer: Message,
    offset: int,
    *,
    progress_seconds: float,
) -> AsyncIterator[str]:
    """Follow an answer written by another process (or already finished) through its row."""
    async with sessionmaker() as session:
        question = await repository.question_of(session, answer)
    if question is None:
        yield sse("error", ENDED_WITHOUT_TEXT)
        return
    meta = StreamMeta(
        chat_id=answer.chat_id,
        user_message=MessageRead.model_validate(question),
        assistant_message_id=answer.id,
    )
    silent = silent_after(progress_seconds)
    # Not capped at the row's text: the reader may have read further in the writing process
    # than its last save.
    offset = max(offset, 0)
    yield sse("meta", meta, offset=offset)
    told_sources, told_steps = False, 0
    row: Message | None = answer
    while True:
        if row is None:
            yield sse("error", ENDED_WITHOUT_TEXT, offset=offset)
            return
        if row.status == MessageStatus.streaming:
            steps = stored_steps(row)
            for step in steps[told_steps:]:
                yield sse("step", step, offset=offset)
            told_steps = max(told_steps, len(steps))
        if row.sources and not told_sources and row.status == MessageStatus.streaming:
            told_sources = True
            sources = StreamSources(**(row.meta or {}), sources=row.sources)
            yield sse("sources", sources, offset=offset)
        if len(row.content) > offset:
            piece, offset = row.content[offset:], len(row.content)
            yield sse("delta", StreamDelta(text=piece), offset=offset)
        if row.status == MessageStatus.complete:
            finished = MessageRead.model_validate(row)
            async with sessionmaker() as session:
                versions = await chats_service.earlier_versions(session, [row.id])
            finished.versions = versions.get(row.id, [])
            yield sse("done", StreamDone(assistant_message=finished))
            return
        await asyncio.sleep(progress_seconds)
        async with sessionmaker() as session:
            row = await _read_stored(session, user_id, answer.id, silent)
