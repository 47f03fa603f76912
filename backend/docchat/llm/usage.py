"""What an answer cost: every model call it made, counted in one place.

An answer may call the model several times: to rewrite the question, to condense long
documents, in tool rounds, and for the answer itself. `MeteredLLM` is the model as one answer
sees it: each call it makes adds its tokens and its waiting time to the answer's `Usage`, so
the tokens saved with the message (and any quota built on them) count them all.

A server that reports no usage (several leave it out of streams) still costs tokens: the call
is counted from its prompt and its text, four characters a token, and the answer's usage is
marked `estimated`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from docchat.kit.tokens import estimate_tokens
from docchat.llm.client import LLM, ChatMessage, Completion, StreamEnd


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int = 0
    llm_seconds: float = 0.0
    estimated: bool = False  # some call's tokens were estimated: the server reported none

    @property
    def llm_ms(self) -> float:
        return round(self.llm_seconds * 1000, 1)

    def add(self, prompt: int | None, completion: int | None) -> None:
        self.calls += 1
        if prompt is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt
        if completion is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion

    def add_call(
        self,
        messages: Sequence[ChatMessage],
        output: str,
        prompt: int | None,
        completion: int | None,
    ) -> None:
        """One call's tokens as the server reported them, or estimated where it did not."""
        if prompt is None or completion is None:
            self.estimated = True
        self.add(
            estimate_prompt_tokens(messages) if prompt is None else prompt,
            estimate_tokens(output) if completion is None else completion,
        )


def estimate_prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    """A prompt's tokens from its text (and any tool calls or results it carries)."""
    return sum(estimate_tokens(_message_text(message)) for message in messages)


def _message_text(message: ChatMessage) -> str:
    content = message.get("content")
    if isinstance(content, list):
        text = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    else:
        text = "" if content is None else str(content)
    calls = message.get("tool_calls")
    return f"{text} {calls}" if calls else text


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
        output = completion.content + "".join(
            call.name + call.arguments for call in completion.tool_calls
        )
        self.usage.add_call(
            messages, output, completion.prompt_tokens, completion.completion_tokens
        )
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
        text: list[str] = []
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
                    self.usage.add_call(
                        messages, "".join(text), item.prompt_tokens, item.completion_tokens
                    )
                else:
                    text.append(item)
                yield item
        finally:
            await pieces.aclose()
