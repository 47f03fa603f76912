"""Phase 2 of the message flow: what the model is shown, the model calls, and the citations.

No database here. `plan_answer` decides the prompt: passages found by search (`auto`), or the
`semantic_search` tool (`tool`), plus the text of documents still processing (inline mode).
`produce` runs the model (with the bounded tool loop) and yields text as it comes.
`cite` turns the raw answer into the saved one: markers renumbered over the cited sources.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from docchat.chats.turns import Turn
from docchat.chats.whole_documents import asks_for_whole_documents, whole_document_entries
from docchat.components import Components
from docchat.documents.filetypes import FileKind
from docchat.kit.errors import DocchatError
from docchat.llm import prompts
from docchat.llm.client import Completion, StreamEnd
from docchat.retrieval.citations import (
    apply_citations,
    has_markers,
    infer_citations,
    says_information_is_missing,
    strip_markers,
)
from docchat.retrieval.context import ContextEntry, build_context, estimate_tokens, format_context
from docchat.retrieval.inline import file_part, file_source
from docchat.retrieval.schemas import Source
from docchat.retrieval.search import search
from docchat.retrieval.tools import SEMANTIC_SEARCH_TOOL, ToolRetrieval, assistant_tool_message

logger = logging.getLogger(__name__)
PROMPT_OVERHEAD_TOKENS = 200
MAX_TOOL_ROUNDS = 3


@dataclass
class Plan:
    """The prompt, and the passages an answer may cite (tool mode adds to them as it searches)."""

    messages: list[dict[str, Any]]
    entries: list[ContextEntry] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # Set when no model call is needed (strict mode with nothing found).
    fixed_answer: str | None = None
    tools: ToolRetrieval | None = None

    @property
    def candidates(self) -> list[Source]:
        return [entry.source for entry in self.entries]


@dataclass(frozen=True)
class Generated:
    content: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Wall time spent waiting for the language model while producing the answer.
    llm_ms: float = 0.0


@dataclass(frozen=True)
class SourcesReady:
    """Yielded by `produce` once retrieval is over, before the first piece of text."""


# -- planning ---------------------------------------------------------------------------------


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


def context_budget(components: Components, turn: Turn) -> int:
    llm, rag = components.settings.llm, components.settings.rag
    used = estimate_tokens(turn.question) + sum(estimate_tokens(m["content"]) for m in turn.history)
    room = llm.context_window - llm.max_tokens - used - PROMPT_OVERHEAD_TOKENS
    return max(0, min(rag.max_context_tokens, room))


async def _searched_entries(
    components: Components, turn: Turn, meta: dict[str, Any], budget: int
) -> list[ContextEntry]:
    if not turn.documents:
        return []
    if asks_for_whole_documents(turn.question, turn.scope):
        whole = await whole_document_entries(components, turn, meta, budget)
        if whole is not None:
            return whole
    started = time.perf_counter()
    query = await _search_query(components, turn)
    if turn.options.reformulate and turn.history:  # the model was asked to rewrite it
        meta["reformulation_ms"] = round((time.perf_counter() - started) * 1000, 1)
    result = await search(
        components.embedder,
        components.vector_store,
        query,
        turn.documents,
        top_k=turn.options.top_k,
        similarity_floor=components.settings.rag.similarity_floor,
        hybrid=components.hybrid,
    )
    meta.update(
        retrieval_ms=round(result.elapsed_ms, 1),
        retrieval_count=len(result.chunks),
        retrieval_mode="vector" if components.hybrid is None else "hybrid",
    )
    if result.unavailable:
        meta["reason"] = "retrieval_unavailable"
        return []
    return build_context(result.chunks, budget)


async def _inline_entries(
    components: Components, turn: Turn, first_number: int, budget: int
) -> tuple[list[ContextEntry], list[dict[str, Any]]]:
    """Passages read from documents still processing, or (PDF input on) the files themselves."""
    entries: list[ContextEntry] = []
    parts: list[dict[str, Any]] = []
    for document in turn.inline_documents:
        number = first_number + len(entries)
        if components.settings.llm.pdf_input and document.kind is FileKind.pdf:
            parts.append(await asyncio.to_thread(file_part, document))
            entries.append(ContextEntry(number, "", file_source(document)))
            continue
        spent = sum(estimate_tokens(entry.text) for entry in entries)
        passages = await components.inline_reader.passages(
            document, components.lexical, budget_tokens=budget - spent
        )
        for offset, passage in enumerate(passages):
            entries.append(ContextEntry(number + offset, passage.text, passage.source))
    return entries, parts


def _with_file_parts(messages: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    """Put the file parts before the question in the last (user) message."""
    if parts:
        question = messages[-1]["content"]
        messages[-1] = {"role": "user", "content": [*parts, {"type": "text", "text": question}]}


async def plan_answer(components: Components, turn: Turn) -> Plan:
    meta: dict[str, Any] = {
        "grounded": False,
        "scope": turn.scope,
        "retrieval": turn.options.retrieval,
        "documents_searched": len(turn.documents),
    }
    general = prompts.general_messages(turn.history, turn.question)
    if not turn.options.rag_enabled:
        return Plan(general, meta={**meta, "reason": "rag_disabled", "documents_searched": 0})
    budget = context_budget(components, turn)
    searched: list[ContextEntry] = []
    if turn.options.retrieval == "auto":
        searched = await _searched_entries(components, turn, meta, budget)
    spent = sum(estimate_tokens(entry.text) for entry in searched)
    inline, file_parts = await _inline_entries(components, turn, len(searched) + 1, budget - spent)
    if inline:
        meta["inline_documents"] = len(turn.inline_documents)
    entries = searched + inline
    if turn.options.retrieval == "tool" and turn.documents:
        return _tool_plan(components, turn, entries, file_parts, meta, budget)
    if not entries:
        meta.setdefault("reason", "no_match" if turn.documents else "no_documents")
        fixed = prompts.NOT_FOUND_ANSWER if turn.options.strict else None
        return Plan(general, meta=meta, fixed_answer=fixed)
    context = format_context([entry for entry in entries if entry.text])
    logger.info(
        "context chat=%s scope=%s documents=%d passages=%d inline=%d context_chars=%d",
        turn.chat_id,
        turn.scope,
        len(turn.documents),
        len(entries),
        len(inline),
        len(context),
    )
    messages = prompts.grounded_messages(
        turn.history, context, turn.question, strict=turn.options.strict
    )
    _with_file_parts(messages, file_parts)
    return Plan(messages, entries, {**meta, "context_chars": len(context)})


def _tool_plan(
    components: Components,
    turn: Turn,
    inline: list[ContextEntry],
    file_parts: list[dict[str, Any]],
    meta: dict[str, Any],
    budget: int,
) -> Plan:
    spent = sum(estimate_tokens(entry.text) for entry in inline)
    tools = ToolRetrieval(
        embedder=components.embedder,
        store=components.vector_store,
        documents=turn.documents,
        hybrid=components.hybrid,
        default_top_k=turn.options.top_k,
        similarity_floor=components.settings.rag.similarity_floor,
        budget_tokens=max(0, budget - spent),
        entries=list(inline),
    )
    context = format_context([entry for entry in inline if entry.text])
    messages = prompts.tool_messages(
        turn.history, context, turn.question, strict=turn.options.strict
    )
    _with_file_parts(messages, file_parts)
    return Plan(messages, list(inline), meta, tools=tools)


# -- generation -------------------------------------------------------------------------------


@dataclass
class _Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    llm_started: float = 0.0
    llm_seconds: float = 0.0

    def start_llm(self) -> None:
        self.llm_started = time.perf_counter()

    def stop_llm(self) -> None:
        self.llm_seconds += time.perf_counter() - self.llm_started

    @property
    def llm_ms(self) -> float:
        return round(self.llm_seconds * 1000, 1)

    def add(self, prompt: int | None, completion: int | None) -> None:
        if prompt is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt
        if completion is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion


async def _tool_rounds(
    components: Components, turn: Turn, plan: Plan, messages: list[dict[str, Any]], usage: _Usage
) -> Completion | None:
    """Let the model search until it answers; None when the rounds ran out without an answer."""
    assert plan.tools is not None
    for _ in range(MAX_TOOL_ROUNDS):
        usage.start_llm()
        completion = await components.llm.complete(
            messages, model=turn.options.model, tools=[SEMANTIC_SEARCH_TOOL]
        )
        usage.stop_llm()
        usage.add(completion.prompt_tokens, completion.completion_tokens)
        if not completion.tool_calls:
            return completion
        messages.append(assistant_tool_message(completion.content, completion.tool_calls))
        for call in completion.tool_calls:
            result = await plan.tools.run(call)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def _adopt_tool_results(plan: Plan) -> None:
    assert plan.tools is not None
    plan.entries = plan.tools.entries
    plan.meta.update(tool_searches=plan.tools.searches, retrieval_count=len(plan.entries))
    if plan.tools.unavailable:
        plan.meta["reason"] = "retrieval_unavailable"
    elif not plan.entries:
        plan.meta["reason"] = "no_match"


async def produce(
    components: Components, turn: Turn, plan: Plan, *, streaming: bool
) -> AsyncIterator[str | SourcesReady | Generated]:
    """Text pieces of the answer (one piece when not streaming), then the `Generated` total."""
    model, usage = turn.options.model, _Usage()
    if plan.fixed_answer is not None:
        yield SourcesReady()
        yield plan.fixed_answer
        yield Generated(plan.fixed_answer, model)
        return
    messages = list(plan.messages)
    if plan.tools is not None:
        answered = await _tool_rounds(components, turn, plan, messages, usage)
        _adopt_tool_results(plan)
        if answered is not None:
            yield SourcesReady()
            yield answered.content
            yield Generated(
                answered.content,
                answered.model,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.llm_ms,
            )
            return
    yield SourcesReady()
    if not streaming:
        usage.start_llm()
        completion = await components.llm.complete(messages, model=model)
        usage.stop_llm()
        usage.add(completion.prompt_tokens, completion.completion_tokens)
        yield completion.content
        yield Generated(
            completion.content,
            completion.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.llm_ms,
        )
        return
    pieces: list[str] = []
    end = StreamEnd(model=model)
    usage.start_llm()
    async for item in components.llm.stream(messages, model=model):
        if isinstance(item, StreamEnd):
            end = item
        else:
            pieces.append(item)
            usage.stop_llm()  # the time the client takes to read a piece is not the model's
            yield item
            usage.start_llm()
    usage.stop_llm()
    usage.add(end.prompt_tokens, end.completion_tokens)
    yield Generated(
        "".join(pieces), end.model, usage.prompt_tokens, usage.completion_tokens, usage.llm_ms
    )


# -- citations --------------------------------------------------------------------------------


def cite(plan: Plan, content: str, turn: Turn) -> tuple[str, list[Source] | None, dict[str, Any]]:
    """The answer as saved: markers renumbered over cited sources, or no sources at all."""
    meta = dict(plan.meta)
    strict = turn.options.strict
    candidates = plan.candidates
    if plan.fixed_answer is not None or not candidates:
        return content, None, meta
    if says_information_is_missing(content):
        meta.update(grounded=False, reason="insufficient_information")
        return (prompts.NOT_FOUND_ANSWER if strict else strip_markers(content)), None, meta
    mode = "model"
    if not strict and not has_markers(content, len(candidates)):
        content = infer_citations(content, [entry.text for entry in plan.entries], turn.question)
        mode = "inferred"
    cited = apply_citations(content, candidates)
    if not cited.sources:
        meta.update(grounded=False, reason="not_cited")
        return (prompts.NOT_FOUND_ANSWER if strict else cited.content), None, meta
    meta.pop("reason", None)
    meta.update(grounded=True, citation_count=len(cited.sources), citation_mode=mode)
    return cited.content, cited.sources, meta
