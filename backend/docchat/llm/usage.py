"""What an answer cost: every model call it made, counted in one place.

An answer may call the model several times: to rewrite the question, to condense long
documents, in tool rounds, and for the answer itself. `MeteredLLM` is the model as one answer
sees it: each call it makes adds its tokens and its waiting time to the answer's `Usage`, so
the tokens saved with the message (and any quota built on them) count them all.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from docchat.llm.client import LLM, ChatMessage, Completion, StreamEnd


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int = 0
    llm_seconds: float = 0.0

    @property
    def llm_ms(self) -> float:
        return round(self.llm_seconds * 1000, 1)

    def add(self, prompt: int | None, completion: int | None) -> None:
        self.calls += 1
        if prompt is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt
        if completion is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion


class MeteredLLM:
    """The model for one answer; every call is counted in `usage`."""

    def __init__(self, llm: LLM, usage: Usage) -> None:
        self.llm = llm
        self.usage = usage

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        started = time.perf_counter()
        try:
            completion = await self.llm.complete(
                messages, model=model, temperature=temperature, max_tokens=max_tokens, tools=tools
            )
        finally:
            self.usage.llm_seconds += time.perf_counter() - started
        self.usage.add(completion.prompt_tokens, completion.completion_tokens)
        return completion

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str | StreamEnd]:
        """The model's pieces; the time a consumer takes with a piece is not the model's."""
        pieces = self.llm.stream(
            messages, model=model, temperature=temperature, max_tokens=max_tokens
        )
        try:
            while True:
                started = time.perf_counter()
                try:
                    item = await anext(pieces)
                except StopAsyncIteration:
                    return
                finally:
                    self.usage.llm_seconds += time.perf_counter() - started
                if isinstance(item, StreamEnd):
                    self.usage.add(item.prompt_tokens, item.completion_tokens)
                yield item
        finally:
            await pieces.aclose()
