"""What the answer engine takes and gives, as plain values: the question and its options, the
plan of its answer (`AnswerEngine.plan`), what the model generated and the answer as saved
(`AnswerEngine.cite`). Safe to keep after any session closed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from docchat.answers.conflicts import Disagreement
from docchat.answers.meta import AnswerMeta, Scope
from docchat.answers.research_loop import ResearchLoop
from docchat.llm.usage import Usage
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.filters import DocumentFilters
from docchat.retrieval.index import SearchScope
from docchat.retrieval.inline import InlineDocument
from docchat.retrieval.schemas import Source
from docchat.retrieval.tools import ToolRetrieval


@dataclass(frozen=True)
class AnswerOptions:
    rag_enabled: bool
    top_k: int
    model: str
    strict: bool = False
    reformulate: bool = False
    retrieval: Literal["auto", "tool"] = "auto"
    # Read whole documents for "summarise this" / "compare these" requests.
    whole_documents: bool = True
    temperature: float | None = None
    # The longest answer the caller wants (None or more: LLM_MAX_TOKENS); lowered to fit.
    max_tokens: int | None = None
    # extractive: quote the passages, no model call; auto: see `AnswerEngine.extracts`.
    answer_mode: Literal["auto", "generative", "extractive"] = "auto"
    # Search each part of the question as well as the whole (`answers.research`); with a
    # model that calls tools, let it research further (`answers.research_loop`).
    research: bool = False
    # Only documents that match these (name, kind, dates, collection, language).
    filters: DocumentFilters | None = None


@dataclass(frozen=True)
class Question:
    text: str
    # Earlier messages, oldest first, as the model should see them.
    history: list[dict[str, Any]]
    # Completed documents to search: from the owner-scoped query only.
    documents: SearchScope
    options: AnswerOptions
    scope: Scope | None = None
    # Documents attached to this question that are still processing: read directly.
    inline_documents: list[InlineDocument] = field(default_factory=list)
    # Without passages: our general-conversation prompt (chats), or the messages as the
    # caller sent them (the OpenAI-compatible endpoint).
    general_system_prompt: bool = True
    # Names the conversation in the logs (a chat id).
    label: str = ""
    # The running summary of the conversation before `history` (`chats.summaries`).
    summary: str | None = None
    # Who asks: the passages' headers name the collections this person sees their documents
    # in (None: no collection is named).
    reader: uuid.UUID | None = None

    # The chat's previous answer came from documents: this question may well follow up on it
    # ("and how far can it be seen?") in words that match no passage by themselves.
    follows_grounded_answer: bool = False

    @property
    def require_match(self) -> bool:
        """Whether a passage must reach the match floor for the answer to use documents: not
        when the user picked them (message or chat) or the chat is already about them."""
        return self.scope not in ("message", "chat") and not self.follows_grounded_answer


@dataclass
class Plan:
    """The prompt, and the passages an answer may cite (tool mode adds to them as it searches)."""

    messages: list[dict[str, Any]]
    usage: Usage
    meta: AnswerMeta
    max_tokens: int
    entries: list[ContextEntry] = field(default_factory=list)
    # Set when no model call is needed (strict mode with nothing found).
    fixed_answer: str | None = None
    tools: ToolRetrieval | None = None
    # Research mode with a model that calls tools: its steps run in `produce`.
    research: ResearchLoop | None = None
    # The fixed answer quotes the passages (extractive mode).
    extracted: bool = False
    # Documents among the quoted passages that disagree on what was asked (extractive mode).
    disagreement: Disagreement | None = None

    @property
    def candidates(self) -> list[Source]:
        return [entry.source for entry in self.entries]


@dataclass(frozen=True)
class Generated:
    content: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Wall time spent waiting for the language model, every call of the answer included.
    llm_ms: float = 0.0
    # Some call's tokens were estimated from its text: the model's server reported none.
    tokens_estimated: bool = False


@dataclass(frozen=True)
class SourcesReady:
    """Yielded by `produce` once retrieval is over, before the first piece of text."""


@dataclass(frozen=True)
class CitedAnswer:
    content: str
    sources: list[Source] | None
    meta: AnswerMeta
