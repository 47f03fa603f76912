"""The answer engine: a question over a document scope in, a grounded (or general) answer out.

One path for the chat routes and the OpenAI-compatible endpoint, with no database of its own:
1. `plan`: the context, under one `TokenBudget`: passages found by the `Retriever` (`auto`),
   or none up front and the `semantic_search` tool (`tool`), whole documents for "summarise"
   requests, and the text of documents still processing (inline); then the prompt;
2. `produce`: the model calls (the bounded tool loop, then the answer), text as it comes;
3. `cite`: the raw answer becomes the saved one, `[n]` markers renumbered over the sources it
   cites.
An answer that is nothing but markers ("[1]", which small models write) is asked for once more,
then quoted instead (`produce`). With the built-in demo model, no question the documents do not
answer goes to the model, small talk aside: its general answers are invented (`plan`).
Every model call of an answer goes through one `MeteredLLM`, so the tokens and the time an
answer reports are all of its calls.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from docchat.answers import conflicts, extractive, research, trailer
from docchat.answers.evidence import (
    Gloss,
    Needs,
    Verdict,
    no_gloss,
    unsupported_removed,
    verdict,
)
from docchat.answers.highlights import answer_highlights, matched_text, quoted_highlights
from docchat.answers.meta import (
    AnswerMeta,
    CitedDocument,
    ExtractiveReason,
    ResearchStep,
    Scope,
)
from docchat.answers.research_loop import ResearchLoop
from docchat.answers.research_tools import ResearchTools
from docchat.answers.search_queries import Asked, QueryWriter
from docchat.answers.small_talk import is_small_talk
from docchat.answers.values import (
    AnswerOptions,
    CitedAnswer,
    Generated,
    Plan,
    Question,
    SourcesReady,
)
from docchat.answers.whole_documents import WholeDocuments, asks_for_whole_documents
from docchat.config import AnswerSettings, IndexingSettings, LLMSettings, SearchSettings
from docchat.extraction.kinds import FileKind
from docchat.kit.tokens import estimate_tokens
from docchat.llm import prompts
from docchat.llm.client import LLM, Completion, StreamEnd
from docchat.llm.usage import MeteredLLM, Usage
from docchat.retrieval.citations import (
    MarkerFilter,
    apply_citations,
    has_markers,
    infer_citations,
    is_bare,
    may_be_bare,
    says_information_is_missing,
    strip_markers,
)
from docchat.retrieval.context import (
    ContextEntry,
    TokenBudget,
    build_context,
    dated,
    documents_of,
    format_context,
    with_highlights,
)
from docchat.retrieval.filters import DocumentCatalogue
from docchat.retrieval.highlight import asked_kind
from docchat.retrieval.index import DocumentScope, ScoredChunk, SearchScope
from docchat.retrieval.inline import InlineReader, file_part, file_source
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.named_in_question import filters_named, speaks_of_documents
from docchat.retrieval.passage_glosses import PassageGlosses
from docchat.retrieval.passage_identity import DocumentIdentities, DocumentIdentity
from docchat.retrieval.retriever import Retriever
from docchat.retrieval.schemas import Source
from docchat.retrieval.tools import SEMANTIC_SEARCH_TOOL, ToolRetrieval, assistant_tool_message

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 3
# The passages shown as the nearest ones, not an answer, with an answer the documents do not give.
NEAREST_SHOWN = 2
# Why quotes are a partial answer when the model said they do not answer (`_uncited_fallback`).
MODEL_FOUND_NONE = "the model found no answer in them"
_NOT_ANSWERED_FIRST = re.compile(
    r"\W*(?:the|your) (?:documents|passages|sources) (?:do not|don't|does not|doesn't)"
    r" (?:answer|say|mention|contain|cover|give|state)",
    re.IGNORECASE,
)


@dataclass
class _Attempt:
    """One answer the model wrote, as it comes."""

    model: str
    pieces: list[str] = field(default_factory=list)
    # Some of it reached the reader (an answer held back until it was known not to be bare,
    # or not to say the documents do not answer, did not).
    shown: bool = False

    @property
    def text(self) -> str:
        return "".join(self.pieces)


@dataclass
class _Searched:
    """What the search of a question found: the answer's passages, numbered; the nearest ones
    when none reached the match floor; in research mode, what each part found, and the
    passages as found (for the handles of their documents)."""

    entries: list[ContextEntry] = field(default_factory=list)
    nearest: list[ContextEntry] = field(default_factory=list)
    parts: list[research.Found] = field(default_factory=list)
    chunks: list[ScoredChunk] = field(default_factory=list)


class AnswerEngine:
    def __init__(
        self,
        *,
        llm: LLM,
        retriever: Retriever,
        lexical: LexicalIndex,
        inline_reader: InlineReader,
        search: SearchSettings,
        answers: AnswerSettings,
        indexing: IndexingSettings,
        llm_settings: LLMSettings,
        query_writer: QueryWriter,
        identities: DocumentIdentities,
        catalogue: DocumentCatalogue,
        glosses: PassageGlosses | None = None,
    ) -> None:
        self.llm = llm
        self.retriever = retriever
        self.lexical = lexical
        self.inline_reader = inline_reader
        self.search = search
        self.answers = answers
        self.indexing = indexing
        self.llm_settings = llm_settings
        self.query_writer = query_writer
        # The dates and collections in the passages' headers (the documents package's SQL).
        self.identities = identities
        # The documents of a scope by name, kind, date... (filters, research's listings).
        self.catalogue = catalogue
        # The English of passages in other languages, for the evidence verdict.
        self.gloss: Gloss = glosses.english if glosses is not None else no_gloss

    # -- planning -------------------------------------------------------------------------------

    def anticipate_search(self, query: str) -> None:
        """Start embedding `query`, which this process's next search for it will use: the model
        runs while the caller does its other work (a search that never comes costs one
        embedding)."""
        self.retriever.anticipate(query)

    def search_ahead(
        self, query: str, scope: Scope, documents: SearchScope, options: AnswerOptions
    ) -> None:
        """Start the search `plan` will run for a question asked with its own words, as soon as
        its scope is known: it runs while the caller saves the turn (a search that never comes
        is wasted work). Not for what `plan` reads otherwise: whole documents, the tool."""
        if not (options.rag_enabled and options.retrieval == "auto" and documents):
            return
        if options.whole_documents and asks_for_whole_documents(query, scope):
            return
        self.retriever.search_ahead(query, documents, _whole_depth(options))

    def answer_tokens(self, options: AnswerOptions) -> int:
        """What the caller asked for, never more than LLM_MAX_TOKENS."""
        longest = self.llm_settings.max_tokens
        return min(options.max_tokens or longest, longest)

    def budget(self, question: Question) -> TokenBudget:
        prompt_tokens = (
            estimate_tokens(question.text)
            + estimate_tokens(question.summary or "")
            + sum(
                estimate_tokens(str(message.get("content") or "")) for message in question.history
            )
        )
        return TokenBudget.for_prompt(
            window=self.llm_settings.context_window,
            answer_tokens=self.answer_tokens(question.options),
            prompt_tokens=prompt_tokens,
            cap=self.search.max_context_tokens
            * (research.CONTEXT_FACTOR if question.options.research else 1),
        )

    def _fitted_max_tokens(self, question: Question, messages: list[dict[str, Any]]) -> int:
        """The answer's length, lowered to what the window leaves after the prompt."""
        used = sum(estimate_tokens(str(message.get("content") or "")) for message in messages)
        room = self.llm_settings.context_window - used
        return max(1, min(self.answer_tokens(question.options), room))

    def _general(self, question: Question) -> list[dict[str, Any]]:
        if question.general_system_prompt:
            return prompts.general_messages(
                question.history, question.text, summary=question.summary
            )
        return [*question.history, {"role": "user", "content": question.text}]

    async def plan(self, question: Question) -> Plan:
        question, narrowed_by = await self._filtered(question)
        options = question.options
        usage = Usage()
        llm = MeteredLLM(self.llm, usage)
        meta = AnswerMeta(
            grounded=False,
            scope=question.scope,
            retrieval=options.retrieval,
            documents_searched=DocumentScope.of(question.documents).size,
        )
        meta.filters = narrowed_by
        if narrowed_by and not question.documents:
            meta.reason = "no_filter_match"  # (what a question names never narrows to nothing)
        general = self._general(question)
        unsearched = self._unsearched_plan(question, general, usage, meta)
        if unsearched is not None:
            return unsearched
        builtin_guard = self.answers_without_general_knowledge(options)
        budget = self.budget(question)
        extracting = self.extracts(options)
        found = _Searched()
        if options.retrieval == "auto" or extracting is not None:
            found = await self._searched_entries(
                question, llm, meta, budget, nearest_below_floor=builtin_guard
            )
        searched, nearest, parts = found.entries, found.nearest, found.parts
        inline, file_parts = await self._inline_entries(question, len(searched) + 1, budget)
        if inline:
            meta.inline_documents = len(question.inline_documents)
        entries = searched + inline
        asked = matched_text(question.text, meta)
        if meta.retrieval_mode != "whole_documents":
            entries = with_highlights(entries, asked)
        identities = await self._identities(question, [entry for entry in entries if entry.text])
        entries = dated(entries, identities)
        if extracting is not None and meta.retrieval_mode != "whole_documents":
            extracted = research.brief(parts, entries, self.gloss) if parts else None
            if extracted is None:
                extracted = extractive.answer(asked, entries, asked=question.text, gloss=self.gloss)
            if extracted is not None:
                return self._extractive_plan(general, usage, meta, entries, extracted, extracting)
        if options.retrieval == "tool" and question.documents:
            return self._tool_plan(question, entries, identities, file_parts, meta, budget, usage)
        if self._researches_with_tools(question, meta):
            return self._research_plan(
                question, entries, found.chunks, file_parts, meta, budget, usage
            )
        if not entries:
            meta.reason = meta.reason or ("no_match" if question.documents else "no_documents")
            if builtin_guard:
                return self._not_answered_plan(question, general, usage, meta, nearest)
            fixed = prompts.NOT_FOUND_ANSWER if options.strict else None
            return Plan(
                general, usage, meta, self._fitted_max_tokens(question, general), fixed_answer=fixed
            )
        return self._grounded_plan(
            question, entries, identities, len(inline), file_parts, usage, meta
        )

    def _unsearched_plan(
        self, question: Question, general: list[dict[str, Any]], usage: Usage, meta: AnswerMeta
    ) -> Plan | None:
        """The plan of a question no document is searched for (small talk to the built-in
        model, documents off), or None."""
        builtin_guard = self.answers_without_general_knowledge(question.options)
        if builtin_guard and is_small_talk(question.text):
            # "hello", "thanks": the model answers; no passage is quoted for them.
            meta.documents_searched = 0
            return Plan(general, usage, meta, self._fitted_max_tokens(question, general))
        if question.options.rag_enabled:
            return None
        meta = meta.model_copy(update={"reason": "rag_disabled", "documents_searched": 0})
        if builtin_guard:
            return self._not_answered_plan(question, general, usage, meta, [])
        return Plan(general, usage, meta, self._fitted_max_tokens(question, general))

    async def _identities(
        self, question: Question, entries: list[ContextEntry]
    ) -> Mapping[uuid.UUID, DocumentIdentity]:
        """The identities of the documents the passages come from, for their headers (one
        query; none when there is no passage to show)."""
        if not entries:
            return {}
        return await self.identities.identities(documents_of(entries), question.reader)

    def _grounded_plan(
        self,
        question: Question,
        entries: list[ContextEntry],
        identities: Mapping[uuid.UUID, DocumentIdentity],
        inline_count: int,
        file_parts: list[dict[str, Any]],
        usage: Usage,
        meta: AnswerMeta,
    ) -> Plan:
        """The prompt that gives the model the passages to answer from, each after its header."""
        context = format_context([entry for entry in entries if entry.text], identities)
        logger.info(
            "context chat=%s scope=%s documents=%d passages=%d inline=%d context_chars=%d",
            question.label,
            question.scope,
            DocumentScope.of(question.documents).size,
            len(entries),
            inline_count,
            len(context),
        )
        grounded = _grounded(question, context)
        _with_file_parts(grounded, file_parts)
        meta.context_chars = len(context)
        return Plan(
            grounded, usage, meta, self._fitted_max_tokens(question, grounded), entries=entries
        )

    def extracts(self, options: AnswerOptions) -> ExtractiveReason | None:
        """Why this answer quotes its passages rather than asking the model, or None: asked for
        (the setting or the message), or `auto` with the built-in demo model."""
        if options.answer_mode == "extractive":
            return "requested"
        if self.answers_without_general_knowledge(options):
            return "builtin_model"
        return None

    def answers_without_general_knowledge(self, options: AnswerOptions) -> bool:
        """`auto` with the built-in demo model: a question the documents do not answer is told
        so (with the nearest passages, if some come close), never given the model's general
        answer, whose facts a 135M model invents ("the 1998 World Cup was won by the United
        States"); small talk still goes to the model (`small_talk`)."""
        return options.answer_mode == "auto" and self.llm_settings.builtin

    def _not_answered_plan(
        self,
        question: Question,
        general: list[dict[str, Any]],
        usage: Usage,
        meta: AnswerMeta,
        nearest: list[ContextEntry],
    ) -> Plan:
        """What the built-in model's answer says when the documents do not answer: so, and the
        nearest passages quoted when some came close (over the similarity floor, under the
        match floor) and mention what the question names; no model call."""
        meta.evidence = "not_in_documents"
        if nearest:
            asked = matched_text(question.text, meta)
            nearest = with_highlights(nearest, asked)
            extracted = extractive.answer(
                asked, nearest, asked=question.text, nearest=True, gloss=self.gloss
            )
            if extracted is not None and extracted.quotes:
                return self._extractive_plan(
                    general, usage, meta, nearest, extracted, "builtin_model"
                )
        reason = meta.reason or "no_match"
        fixed = prompts.BUILTIN_NOT_ANSWERED.get(reason, prompts.BUILTIN_NOT_ANSWERED["no_match"])
        return Plan(general, usage, meta, max_tokens=1, fixed_answer=fixed)

    def _extractive_plan(
        self,
        general: list[dict[str, Any]],
        usage: Usage,
        meta: AnswerMeta,
        entries: list[ContextEntry],
        extracted: extractive.Extracted,
        reason: ExtractiveReason,
    ) -> Plan:
        meta.answer_mode, meta.extractive_reason = "extractive", reason
        meta.context_chars = sum(len(entry.text) for entry in entries)
        _judged(meta, extracted.verdict)
        if not extracted.quotes:  # the passages are about something else than the question names
            return Plan(general, usage, meta, max_tokens=1, fixed_answer=extracted.text)
        return Plan(
            general,
            usage,
            meta,
            max_tokens=1,
            entries=quoted_highlights(entries, extracted.quotes),
            fixed_answer=extracted.text,
            extracted=True,
            disagreement=extracted.disagreement,
        )

    async def _searched_entries(
        self,
        question: Question,
        llm: MeteredLLM,
        meta: AnswerMeta,
        budget: TokenBudget,
        *,
        nearest_below_floor: bool = False,
    ) -> _Searched:
        """The passages of the answer, and (`nearest_below_floor`) when the question needed a
        match and none reached the match floor, the nearest passages in their place; in
        research mode, what each part of the question found besides (its passages among the
        answer's)."""
        if not question.documents:
            return _Searched()
        whole = await self._whole_document_entries(question, llm, meta, budget)
        if whole is not None:
            return _Searched(whole)
        asked = Asked(
            question.text,
            question.history,
            question.options.model,
            question.options.reformulate,
        )
        queries = await self.query_writer.queries(asked, llm, meta, question.documents)
        result = await self.retriever.search_wordings(
            queries.wordings,
            question.documents,
            _whole_depth(question.options),
            require_match=question.require_match and not nearest_below_floor,
            languages=queries.languages,
        )
        meta.retrieval_ms = round(result.elapsed_ms, 1)
        meta.retrieval_mode = self.retriever.mode
        if result.unavailable:
            meta.reason = "retrieval_unavailable"
            return _Searched()
        if question.require_match and self.retriever.misses_match_floor(result):
            meta.retrieval_count = 0
            return _Searched(nearest=build_context(result.chunks, budget))
        chunks, found = result.chunks, []
        if question.options.research and chunks:
            parts = research.parts_of(question.text)
            top_k = question.options.top_k
            leading = research.Leading.of(chunks)
            found = await research.search_parts(
                self.retriever, parts, question.documents, top_k, leading
            )
            within = await research.search_leading(self.retriever, question.text, leading, top_k)
            chunks, meta.research = research.merged(question.text, chunks, found, within)
        meta.retrieval_count = len(chunks)
        return _Searched(build_context(chunks, budget), parts=found, chunks=chunks)

    async def _whole_document_entries(
        self, question: Question, llm: MeteredLLM, meta: AnswerMeta, budget: TokenBudget
    ) -> list[ContextEntry] | None:
        """The documents read whole for a "summarise this" request; None for any other
        question, or documents too long to condense (they are searched instead)."""
        if not (
            question.options.whole_documents
            and asks_for_whole_documents(question.text, question.scope)
        ):
            return None
        whole = WholeDocuments(
            llm,
            self.lexical,
            answers=self.answers,
            indexing=self.indexing,
            llm_settings=self.llm_settings,
        )
        return await whole.entries(
            question.text,
            question.documents,
            model=question.options.model,
            label=question.label,
            meta=meta,
            budget=budget,
        )

    async def _inline_entries(
        self, question: Question, first_number: int, budget: TokenBudget
    ) -> tuple[list[ContextEntry], list[dict[str, Any]]]:
        """Passages read from documents still processing, or (PDF input on) the files themselves."""
        entries: list[ContextEntry] = []
        parts: list[dict[str, Any]] = []
        for document in question.inline_documents:
            number = first_number + len(entries)
            if self.llm_settings.pdf_input and document.kind is FileKind.pdf:
                parts.append(await file_part(document))
                entries.append(ContextEntry(number, "", file_source(document)))
                continue
            passages = await self.inline_reader.passages(document, self.lexical, budget)
            for offset, passage in enumerate(passages):
                entries.append(ContextEntry(number + offset, passage.text, passage.source))
        return entries, parts

    def _tool_plan(
        self,
        question: Question,
        inline: list[ContextEntry],
        identities: Mapping[uuid.UUID, DocumentIdentity],
        file_parts: list[dict[str, Any]],
        meta: AnswerMeta,
        budget: TokenBudget,
        usage: Usage,
    ) -> Plan:
        tools = ToolRetrieval(
            retriever=self.retriever,
            documents=question.documents,
            default_top_k=question.options.top_k,
            budget=budget,
            entries=list(inline),
            require_match=question.require_match,
            identities=self.identities,
            reader=question.reader,
        )
        context = format_context([entry for entry in inline if entry.text], identities)
        messages = prompts.tool_messages(
            question.history,
            context,
            question.text,
            strict=question.options.strict,
            summary=question.summary,
        )
        _with_file_parts(messages, file_parts)
        max_tokens = self._fitted_max_tokens(question, messages)
        return Plan(messages, usage, meta, max_tokens, entries=list(inline), tools=tools)

    async def _filtered(self, question: Question) -> tuple[Question, str | None]:
        """The question with its documents narrowed to those its filters let through, else
        to those it names (`named_in_question`), and what narrowed them, in words."""
        filters = question.options.filters
        if not question.documents:
            return question, None
        if filters is not None and not filters.empty:
            narrowed = await self.catalogue.narrowed(question.documents, filters, question.reader)
            return dataclasses.replace(question, documents=narrowed), filters.describe()
        if not self.answers.narrow_to_named or question.scope == "message":
            return question, None
        return await self._named(question)

    async def _named(self, question: Question) -> tuple[Question, str | None]:
        """Narrowed to the documents the question names by name, then by kind and year; the
        whole scope where what it names matches nothing."""
        documents, said = DocumentScope.of(question.documents), []
        named = DocumentScope([])
        if speaks_of_documents(question.text):
            named = await self.catalogue.named(documents, question.text)
        if named:
            documents = named
            said.append("documents named in the question")
        implied = filters_named(question.text)
        if not implied.empty:
            kept = await self.catalogue.narrowed(documents, implied, question.reader)
            if kept:
                documents = kept
                said.append(implied.describe())
        if not said:
            return question, None
        return dataclasses.replace(question, documents=documents), ", ".join(said)

    def _researches_with_tools(self, question: Question, meta: AnswerMeta) -> bool:
        """Research mode with a model that writes its answers (not quoted ones), over documents
        searched (not read whole)."""
        return (
            question.options.research
            and question.options.retrieval == "auto"
            and bool(question.documents)
            and self.extracts(question.options) is None
            and meta.retrieval_mode != "whole_documents"
            and meta.reason != "retrieval_unavailable"
        )

    def _research_plan(
        self,
        question: Question,
        entries: list[ContextEntry],
        chunks: list[ScoredChunk],
        file_parts: list[dict[str, Any]],
        meta: AnswerMeta,
        budget: TokenBudget,
        usage: Usage,
    ) -> Plan:
        """Research with tools: the model starts from what the question and its parts found,
        and its steps run in `produce` (where each is shown as it is taken)."""
        passages = ToolRetrieval(
            retriever=self.retriever,
            documents=question.documents,
            default_top_k=question.options.top_k,
            budget=budget,
            require_match=False,
            identities=self.identities,
            reader=question.reader,
        )
        passages.seed(entries)
        tools = ResearchTools(passages, self.catalogue, self.lexical, reader=question.reader)
        tools.know([hit.chunk for hit in chunks])
        for search in meta.research or []:
            part = f" (part: {search.part})" if search.part not in (None, search.query) else ""
            within = f" in {search.document}" if search.document else ""
            said = (
                f"Searched '{search.query}'{within}{part}: "
                f"{search.passages} passages, {search.new} new"
            )
            tools.record(
                ResearchStep(
                    number=len(tools.steps) + 1, action="search", said=said, query=search.query
                )
            )
        loop = ResearchLoop(
            tools,
            max_steps=self.answers.research_max_steps,
            max_tokens=self.answers.research_max_tokens,
        )
        context = format_context([entry for entry in entries if entry.text], {})
        messages = prompts.research_messages(
            question.history,
            context,
            tools.handles(),
            question.text,
            strict=question.options.strict,
            summary=question.summary,
        )
        _with_file_parts(messages, file_parts)
        max_tokens = self._fitted_max_tokens(question, messages)
        return Plan(messages, usage, meta, max_tokens, entries=entries, research=loop)

    async def _researched(
        self, question: Question, plan: Plan, llm: MeteredLLM, messages: list[dict[str, Any]]
    ) -> AsyncIterator[ResearchStep]:
        """The research's steps (those of the searches it started from first), then `plan`
        made that of the answer: every passage found or read, and the prompt to write it from
        (`messages` replaced), unless the model already answered (`plan.research.given`)."""
        loop = plan.research
        assert loop is not None
        for step in loop.tools.steps:
            yield step
        async for step in loop.steps(llm, messages, question.options.model):
            yield step
        meta = plan.meta
        meta.research_steps, meta.research_end = list(loop.tools.steps), loop.end
        asked = matched_text(question.text, meta)
        plan.entries = with_highlights(loop.tools.passages.dated_entries, asked)
        meta.retrieval_count = len(plan.entries)
        if loop.given is not None:
            return
        if not plan.entries:
            meta.reason = meta.reason or "no_match"
            messages[:] = self._general(question)
        else:
            context = await loop.tools.passages.formatted(plan.entries)
            meta.context_chars = len(context)
            grounded = _grounded(question, context)
            closing = loop.closing_instruction()
            messages[:] = prompts.with_instruction(grounded, closing) if closing else grounded
        plan.max_tokens = self._fitted_max_tokens(question, messages)

    # -- generation -----------------------------------------------------------------------------

    async def produce(
        self, question: Question, plan: Plan, *, streaming: bool
    ) -> AsyncIterator[str | SourcesReady | Generated | ResearchStep]:
        """Text pieces of the answer (one piece when not streaming), then the `Generated` total."""
        options = question.options
        llm = MeteredLLM(self.llm, plan.usage)
        if plan.fixed_answer is not None:
            yield SourcesReady()
            # An extractive answer streams a block (its introduction, then each quote) at a time.
            for piece in _blocks(plan.fixed_answer) if streaming else [plan.fixed_answer]:
                yield piece
            yield self._generated(plan, plan.fixed_answer, options.model)
            return
        messages = list(plan.messages)
        given: Completion | None = None
        if plan.tools is not None:
            given = await self._tool_rounds(question, plan, llm, messages)
            _adopt_tool_results(plan)
        if plan.research is not None:
            async for step in self._researched(question, plan, llm, messages):
                yield step
            given = plan.research.given
        yield SourcesReady()
        # What the engine quotes as answering it: a model that says they do not is asked again
        # with those quotes before its answer is shown.
        answering = self._answering_quotes(question, plan) if given is None else None
        attempt = _Attempt(options.model)
        async for shown in self._attempt(
            question, plan, llm, messages, attempt, streaming, given, hold_refusal=bool(answering)
        ):
            yield shown
        if answering and not attempt.shown and _refuses(attempt.text):
            plan.meta.answer_retried = True
            retry = prompts.quote_retry_messages(messages, answering)
            attempt = _Attempt(options.model)
            async for shown in self._attempt(question, plan, llm, retry, attempt, streaming):
                yield shown
        if plan.candidates and is_bare(trailer.split(attempt.text).body):
            # "[1]" alone: asked once more for the sentence first, then quoted instead.
            plan.meta.answer_retried = True
            retry = prompts.bare_retry_messages(messages)
            attempt = _Attempt(options.model)
            async for shown in self._attempt(question, plan, llm, retry, attempt, streaming):
                yield shown
            if is_bare(trailer.split(attempt.text).body):
                text = self._instead_of_bare(question, plan)
                for piece in _blocks(text) if streaming else [text]:
                    yield piece
                yield self._generated(plan, text, attempt.model)
                return
        yield self._generated(plan, attempt.text, attempt.model)

    async def _attempt(
        self,
        question: Question,
        plan: Plan,
        llm: MeteredLLM,
        messages: list[dict[str, Any]],
        attempt: _Attempt,
        streaming: bool,
        given: Completion | None = None,
        *,
        hold_refusal: bool = False,
    ) -> AsyncIterator[str]:
        """One answer of the model (or `given`, the tool rounds' last), collected in `attempt`,
        its text yielded as it comes. An answer with passages to cite is held back while it is
        nothing but markers (`may_be_bare`): a bare "[1]" is never shown. With `hold_refusal`,
        also while it may say that the documents do not answer (`_may_refuse`), and not at all
        when it does: it is asked again."""
        options = question.options
        if given is not None or not streaming:
            completion = given or await llm.complete(
                messages,
                model=options.model,
                max_tokens=plan.max_tokens,
                temperature=options.temperature,
            )
            attempt.pieces.append(completion.content)
            attempt.model = completion.model
            shown = (
                trailer.split(completion.content).body if plan.candidates else completion.content
            )
            if not (plan.candidates and is_bare(shown)) and not (
                hold_refusal and _refuses(completion.content)
            ):
                attempt.shown = True
                yield shown
            return
        # With no sources, `[n]` markers point at nothing: they never reach the reader.
        markers = MarkerFilter() if not plan.candidates else None
        # With sources, the model's verdict line at the end never does either.
        verdict_line = trailer.TrailerFilter() if plan.candidates else None
        held: str | None = ""  # None once the answer has shown it is one
        async for item in llm.stream(
            messages,
            model=options.model,
            max_tokens=plan.max_tokens,
            temperature=options.temperature,
        ):
            if isinstance(item, StreamEnd):
                attempt.model = item.model
                continue
            attempt.pieces.append(item)
            if markers is not None:
                item = markers.feed(item)
            elif verdict_line is not None:
                item = verdict_line.feed(item)
            if held is not None and markers is None:
                held += item
                if may_be_bare(held) or (hold_refusal and _may_refuse(held)):
                    continue
                item, held = held, None
            if item:
                attempt.shown = True
                yield item
        if markers is not None and (rest := markers.flush().rstrip()):
            yield rest
        if verdict_line is not None and (rest := verdict_line.flush()):
            if held is not None:
                held += rest
            else:
                attempt.shown = True
                yield rest
        if held and not is_bare(held) and not (hold_refusal and _refuses(attempt.text)):
            attempt.shown = True
            yield held

    def _instead_of_bare(self, question: Question, plan: Plan) -> str:
        """The answer in place of two bare ones: the extractive answer (`plan` becomes that of
        a quoted answer, for `cite`), or, with nothing to quote, a plain word that there is no
        answer."""
        text = self._quoted_instead(question, plan, "bare")
        if text is not None:
            return text
        plan.meta.reason = "not_cited"
        plan.fixed_answer = prompts.NO_ANSWER_WRITTEN
        return plan.fixed_answer

    def _answering_quotes(self, question: Question, plan: Plan) -> list[str]:
        """The sentences the engine would quote as answering a question that asks for a figure
        or a date (`extractive.answer`, judged `answered`), each ending with its passage's
        marker; none for any other question (a word of the question in a quote does not
        answer "What colour is the bridge?"), or without passages to quote."""
        if (
            not plan.candidates
            or plan.meta.retrieval_mode == "whole_documents"
            or asked_kind(question.text) not in ("number", "date")
        ):
            return []
        asked = matched_text(question.text, plan.meta)
        extracted = extractive.answer(asked, plan.entries, asked=question.text, gloss=self.gloss)
        if extracted is None or extracted.verdict.evidence != "answered":
            return []
        return [
            f"{extractive.quoted_text(quote.entry, quote.highlight)} [{quote.entry.number}]"
            for quote in extracted.quotes
        ]

    def _quoted_instead(
        self, question: Question, plan: Plan, reason: ExtractiveReason, *, doubt: str | None = None
    ) -> str | None:
        """The extractive answer in place of the model's, for an answer from passages that the
        model failed (`reason`); `plan` made that of the quoted answer. None when nothing can
        be quoted (whole documents, passages without text), or, with `doubt`, when the quotes
        do not answer it by the engine's check either. When the passages do not mention what
        the question names, the answer says so, and cites nothing (`fixed_answer`)."""
        if plan.meta.retrieval_mode == "whole_documents":
            return None
        asked = matched_text(question.text, plan.meta)
        extracted = extractive.answer(
            asked, plan.entries, asked=question.text, doubt=doubt, gloss=self.gloss
        )
        if extracted is None or (doubt is not None and extracted.verdict.why != doubt):
            return None
        plan.meta.answer_mode, plan.meta.extractive_reason = "extractive", reason
        plan.meta.reason = None
        _judged(plan.meta, extracted.verdict)
        if not extracted.quotes:
            plan.fixed_answer = extracted.text
            return extracted.text
        plan.entries = quoted_highlights(plan.entries, extracted.quotes)
        plan.extracted = True
        plan.disagreement = extracted.disagreement
        return extracted.text

    @staticmethod
    def _generated(plan: Plan, content: str, model: str) -> Generated:
        usage = plan.usage
        return Generated(
            content,
            model,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.llm_ms,
            tokens_estimated=usage.estimated,
        )

    async def _tool_rounds(
        self, question: Question, plan: Plan, llm: MeteredLLM, messages: list[dict[str, Any]]
    ) -> Completion | None:
        """Let the model search until it answers; None when the rounds ran out without an answer."""
        assert plan.tools is not None
        for _ in range(MAX_TOOL_ROUNDS):
            completion = await llm.complete(
                messages, model=question.options.model, tools=[SEMANTIC_SEARCH_TOOL]
            )
            if not completion.tool_calls:
                return completion
            messages.append(assistant_tool_message(completion.content, completion.tool_calls))
            for call in completion.tool_calls:
                result = await plan.tools.run(call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None

    # -- citations ------------------------------------------------------------------------------

    def cite(
        self, question: Question, plan: Plan, content: str, *, stopped: bool = False
    ) -> CitedAnswer:
        """The answer as saved (`_cite`); a research answer's citations also grouped by
        document."""
        cited = self._cite(question, plan, content, stopped=stopped)
        if question.options.research and cited.sources and cited.meta.grounded:
            cited.meta.cited_documents = _by_document(cited.sources)
        return cited

    def _cite(
        self, question: Question, plan: Plan, content: str, *, stopped: bool = False
    ) -> CitedAnswer:
        """The answer as saved: markers renumbered over cited sources, or no sources at all.

        Each cited source's highlight is chosen again with the answer known (the sentence the
        answer used beats the one that only shares the question's words). In `auto` mode, a
        grounded answer that cites nothing is replaced by the extractive one (not an answer the
        reader stopped: they keep what they were shown). A generative answer's verdict is the
        model's (its `Evidence:` line) checked against the engine's (`evidence.verdict`); its
        citations of passages that do not support their sentence are taken out; sources that
        disagree are said to, with each side, when the answer did not cite them all."""
        meta = plan.meta.model_copy()
        candidates = plan.candidates
        if plan.extracted:
            cited = apply_citations(content, candidates)
            # Quotes of the nearest passages (`_not_answered_plan`) do not answer it.
            meta.grounded, meta.citation_count = meta.reason is None, len(cited.sources)
            if plan.disagreement is not None:
                meta.conflicts = conflicts.numbered(plan.disagreement, cited.sources) or None
            return CitedAnswer(cited.content, cited.sources, meta)
        if plan.fixed_answer is not None:
            return CitedAnswer(content, None, meta)
        if not candidates:
            return CitedAnswer(strip_markers(content), None, meta)
        meta.answer_mode = "generative"
        said = trailer.split(content)
        # "The documents do not answer this question." without a verdict line (a small model
        # drops it) is the model's verdict too; in `auto` it is checked against the engine's.
        says_none = said.trailer.evidence == "none"
        if _refuses(content):
            doubted = None
            # Only a figure or a date the quotes give can contradict the model: "bridge" in a
            # quote about the bridge does not answer "What colour is the bridge?".
            if not says_none and not stopped and asked_kind(question.text) in ("number", "date"):
                doubted = self._uncited_fallback(question, plan, doubt=MODEL_FOUND_NONE)
            return doubted or self._not_in_documents(question, plan, meta, said.body)
        return self._cited(question, plan, meta, said, stopped=stopped)

    def _cited(
        self,
        question: Question,
        plan: Plan,
        meta: AnswerMeta,
        said: trailer.Split,
        *,
        stopped: bool,
    ) -> CitedAnswer:
        """A generative answer that says the documents answer, as saved."""
        strict = question.options.strict
        candidates = plan.candidates
        content = said.body
        if meta.retrieval_mode != "whole_documents":  # notes and summaries paraphrase
            content, removed = unsupported_removed(content, plan.entries)
            meta.unsupported_citations = removed or None
        mode: Literal["model", "inferred"] = "model"
        if not strict and not has_markers(content, len(candidates)):
            passages = [entry.text for entry in plan.entries]
            content = infer_citations(content, passages, question.text)
            mode = "inferred"
        needs = Needs.of(question.text, extractive.names_in(question.text))
        disagreement = self._disagreement(question, plan, needs, said.trailer)
        if disagreement is not None and not conflicts.all_cited(disagreement, content):
            content = f"{content}\n\n{conflicts.note(disagreement)}"
        cited = apply_citations(content, candidates)
        if not cited.sources:
            fallback = None if stopped else self._uncited_fallback(question, plan)
            if fallback is not None:
                return fallback
            meta.grounded, meta.reason = False, "not_cited"
            return CitedAnswer(prompts.NOT_FOUND_ANSWER if strict else cited.content, None, meta)
        rests_on = conflicts.entries_of(plan.entries, cited.sources)
        judged = verdict(needs, rests_on, [cited.content], are_quotes=False, gloss=self.gloss)
        if judged.evidence == "not_in_documents" and not stopped:
            return self._not_in_documents(question, plan, meta, said.body, overruled=judged)
        if judged.evidence == "answered" and said.trailer.evidence == "partial":
            judged = Verdict("partial", "the model found that they answer only part of it")
        _judged(meta, judged)
        if disagreement is not None:
            meta.conflicts = conflicts.numbered(disagreement, cited.sources) or None
        meta.reason = None
        meta.grounded, meta.citation_count, meta.citation_mode = True, len(cited.sources), mode
        sources = cited.sources
        if meta.retrieval_mode != "whole_documents":
            asked = matched_text(question.text, meta)
            sources = answer_highlights(plan.entries, sources, asked, cited.content)
        return CitedAnswer(cited.content, sources, meta)

    def _disagreement(
        self, question: Question, plan: Plan, needs: Needs, stated: trailer.Trailer
    ) -> conflicts.Disagreement | None:
        """The documents among the answer's passages that disagree on what was asked: found by
        the engine, else as the model stated (its `Conflict:` line)."""
        if plan.meta.retrieval_mode == "whole_documents":
            return None
        asked = matched_text(question.text, plan.meta)
        found = conflicts.detect(asked, needs, plan.entries, dated=conflicts.dated)
        if found is None and stated.conflicting:
            found = conflicts.stated(question.text, stated.conflicting, plan.entries)
        return found

    @staticmethod
    def _not_in_documents(
        question: Question,
        plan: Plan,
        meta: AnswerMeta,
        body: str,
        *,
        overruled: Verdict | None = None,
    ) -> CitedAnswer:
        """A generative answer whose documents do not answer the question: it says so first,
        then (unless documents-only) what the model wrote from general knowledge, without
        markers; the nearest passages are its sources, shown as not an answer. `overruled`:
        the engine's verdict, when the model's answer claimed to answer from passages that do
        not mention what the question names or gives."""
        meta.grounded, meta.reason, meta.citation_count = False, "insufficient_information", None
        _judged(meta, overruled or Verdict("not_in_documents"))
        text = strip_markers(body)
        if question.options.strict:
            text = prompts.NOT_FOUND_ANSWER
        elif overruled is not None:
            lead = prompts.NOT_IN_DOCUMENTS_LEAD.removesuffix(".") + f" ({overruled.why})."
            text = f"{lead}\n\n{prompts.OVERRULED_ANSWER_LEAD} {text}" if text else lead
        elif not _says_not_answered_first(text):
            text = (
                f"{prompts.NOT_IN_DOCUMENTS_LEAD}\n\n{text}"
                if text
                else prompts.NOT_IN_DOCUMENTS_LEAD
            )
        return CitedAnswer(text, plan.candidates[:NEAREST_SHOWN] or None, meta)

    def _uncited_fallback(
        self, question: Question, plan: Plan, *, doubt: str | None = None
    ) -> CitedAnswer | None:
        """`auto`: the extractive answer for a grounded question the model answered without
        citing anything it could be attributed to, rather than an answer with no sources (the
        model's stays when nothing the question names can be quoted). With `doubt` (the model
        said the documents do not answer, in prose, with no verdict line), only when the
        engine's own check finds the quotes answer it, and then as a partial answer: two judges
        that disagree (Qwen2.5-1.5B said so of questions its passages answered, once quoting
        the figure asked for in the next sentence)."""
        if question.options.answer_mode != "auto" or question.options.strict:
            return None
        quoting = dataclasses.replace(plan, meta=plan.meta.model_copy())
        text = self._quoted_instead(question, quoting, "uncited", doubt=doubt)
        if text is None or not quoting.extracted:
            return None
        return self.cite(question, quoting, text)


def _whole_depth(options: AnswerOptions) -> int:
    """How many passages the search of the whole question keeps (deeper in research mode)."""
    return options.top_k * (research.WHOLE_DEPTH if options.research else 1)


def _judged(meta: AnswerMeta, judged: Verdict) -> None:
    """The verdict in the answer's meta; an answer the documents do not answer is not
    grounded, whatever it quotes."""
    meta.evidence, meta.evidence_note = judged.evidence, judged.why
    if judged.evidence == "not_in_documents":
        meta.reason = meta.reason or "insufficient_information"


def _refuses(answer: str) -> bool:
    """Whether a model's answer (with its verdict line) says the documents do not answer: its
    verdict is none, or its first sentence, or any of it, says the information is missing."""
    said = trailer.split(answer)
    body = said.body
    return (
        said.trailer.evidence == "none"
        or says_information_is_missing(body)
        or _says_not_answered_first(body)
    )


# The most of an answer held back until its first sentence is known (`_may_refuse`).
FIRST_SENTENCE_HELD_CHARS = 300
_SENTENCE_END = re.compile(r"[.!?:\n]")


def _may_refuse(partial: str) -> bool:
    """Whether an answer that begins with `partial` may be one that says the documents do not
    answer: its first sentence is not complete yet, or says so."""
    text = partial.lstrip()
    if _SENTENCE_END.search(text) is None:
        return len(text) < FIRST_SENTENCE_HELD_CHARS
    return _refuses(text)


def _says_not_answered_first(text: str) -> bool:
    """Whether the answer's first sentence says the documents do not answer."""
    first = text.strip().split("\n", 1)[0][:300]
    return says_information_is_missing(first) or bool(_NOT_ANSWERED_FIRST.match(first))


def _blocks(text: str) -> list[str]:
    """An extractive answer's blocks (its introduction, then each quote), as it streams."""
    return re.split(r"(?<=\n\n)", text)


def _with_file_parts(messages: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    """Put the file parts before the question in the last (user) message."""
    if parts:
        question = messages[-1]["content"]
        messages[-1] = {"role": "user", "content": [*parts, {"type": "text", "text": question}]}


def _grounded(question: Question, context: str) -> list[dict[str, Any]]:
    """The prompt that answers `question` from the passages in `context`."""
    return prompts.grounded_messages(
        question.history,
        context,
        question.text,
        strict=question.options.strict,
        summary=question.summary,
    )


def _by_document(sources: list[Source]) -> list[CitedDocument]:
    """The sources' documents in the order first cited, each with its sources' [n]."""
    grouped: dict[str, CitedDocument] = {}
    for number, source in enumerate(sources, start=1):
        key = str(source.document_id)
        document = grouped.setdefault(
            key, CitedDocument(document_id=key, filename=source.document_name, citations=[])
        )
        document.citations.append(number)
    return list(grouped.values())


def _adopt_tool_results(plan: Plan) -> None:
    assert plan.tools is not None
    plan.entries = plan.tools.dated_entries
    plan.meta.tool_searches = plan.tools.searches
    plan.meta.retrieval_count = len(plan.entries)
    if plan.tools.unavailable:
        plan.meta.reason = "retrieval_unavailable"
    elif not plan.entries:
        plan.meta.reason = "no_match"
