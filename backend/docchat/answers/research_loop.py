"""Research mode with a model that calls tools: the model's steps, bounded.

The research starts from what the question and each of its parts found (`answers.research`),
shown to the model with its tools (`answers.research_tools`). Each round the model either
answers (the research ends `answered`: its text is the answer), or calls tools, natively or
written as JSON in its text (what a model does on a server that does not parse its calls; a
reply that names a tool but cannot be read as a call is not taken as the answer: the answer is
written from what was read). Each call is
run (or refused) and recorded as a step, which the reader sees as it happens. The research
ends when the model calls `finish`, or when its budget is spent: `max_steps` tool calls, or
`max_tokens` tokens over all its calls (then the answer is written from what was read, saying
what was not covered).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from docchat.answers.meta import ResearchEnd, ResearchStep
from docchat.answers.research_tools import RESEARCH_TOOLS, TOOL_NAMES, ResearchTools, error
from docchat.llm import prompts
from docchat.llm.client import Completion, ToolCall
from docchat.llm.usage import MeteredLLM
from docchat.retrieval.tools import assistant_tool_message

STEPS_SPENT = "The research's step budget is spent; this call was not run"
# A tool call written out as text ("<tool_call>", or JSON naming one of the tools).
_SPELLED_OUT_CALL = re.compile(
    r"</?tool_?calls?>|</?tools>|\"name\"\s*:\s*\"(?:"
    + "|".join(re.escape(tool["function"]["name"]) for tool in RESEARCH_TOOLS)
    + r")\"",
    re.IGNORECASE,
)


# Calls taken from one reply's text at most (a reply listing more is cut there).
CALLS_IN_TEXT = 3


def calls_in_text(text: str | None) -> list[ToolCall]:
    """The research tool calls a reply writes as JSON in its text (fenced or not, in
    `<tool_call>` tags, as `{"name", "arguments"}` or OpenAI's `{"function": {...}}`), as models
    do on servers that do not parse their calls (llama.cpp's Python server, by default)."""
    if not text or "{" not in text:
        return []
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    at = text.find("{")
    while at != -1 and len(calls) < CALLS_IN_TEXT:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        call = _as_call(value, len(calls))
        if call is not None:
            calls.append(call)
        at = text.find("{", end)
    return calls


def _as_call(value: Any, index: int) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name")
    if name not in TOOL_NAMES:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=f"text_call_{index}", name=name, arguments=raw)


def spells_out_a_call(text: str | None) -> bool:
    """Whether a reply is a tool call written as text rather than an answer."""
    return bool(text) and _SPELLED_OUT_CALL.search(text or "") is not None


@dataclass
class ResearchLoop:
    tools: ResearchTools
    max_steps: int
    max_tokens: int
    end: ResearchEnd | None = None
    # The model's answer, when it answered instead of calling a tool.
    given: Completion | None = None
    # What the model said it could not find, when it called finish.
    not_covered: str | None = None
    # The model's own steps (the searches the research started from are not counted).
    taken: int = 0
    _spent_at_start: int = field(default=0)

    def _tokens(self, llm: MeteredLLM) -> int:
        usage = llm.usage
        return (usage.prompt_tokens or 0) + (usage.completion_tokens or 0) - self._spent_at_start

    async def steps(
        self, llm: MeteredLLM, messages: list[dict[str, Any]], model: str
    ) -> AsyncIterator[ResearchStep]:
        """The steps as they are taken; `messages` grows with the calls and their results."""
        self._spent_at_start = self._tokens(llm)
        while self.end is None:
            if self.taken >= self.max_steps:
                self.end = "steps"
                return
            if self._tokens(llm) >= self.max_tokens:
                self.end = "tokens"
                return
            completion = await llm.complete(messages, model=model, tools=RESEARCH_TOOLS)
            calls, in_text = completion.tool_calls, False
            if not calls:
                calls, in_text = calls_in_text(completion.content), True
            if not calls:
                self.end = "answered"
                if not spells_out_a_call(completion.content):
                    self.given = completion
                return
            if in_text:
                # A server that does not parse the model's calls: the calls and their results
                # go back as plain messages, which every chat template takes.
                messages.append({"role": "assistant", "content": completion.content})
            else:
                messages.append(assistant_tool_message(completion.content, calls))
            for call in calls:
                if self.end is not None or self.taken >= self.max_steps:
                    # Every call is answered (the protocol wants a result for each id).
                    content = error(STEPS_SPENT)
                else:
                    self.taken += 1
                    outcome = await self.tools.run(call)
                    content = outcome.content
                    if outcome.finished:
                        self.end, self.not_covered = "finished", outcome.not_covered
                    yield outcome.step
                if in_text:
                    said = f"Result of {call.name}:\n{content}"
                    messages.append({"role": "user", "content": said})
                else:
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

    def closing_instruction(self) -> str | None:
        """What the answer is told of how the research ended, if anything."""
        if self.end in ("steps", "tokens"):
            return prompts.RESEARCH_BUDGET_SPENT
        if self.not_covered:
            return prompts.RESEARCH_NOT_COVERED.format(parts=self.not_covered)
        return None
