"""What an answer says about itself: grounded or not and why, how it was found, what it cost.

Saved with each assistant message (`meta`) and sent on the stream's `sources` event; typed here
so the API schema (and the web app's generated client) describe every field. Fields that do
not apply to an answer are left out of it, not sent as null.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Reason = Literal[
    "no_documents",
    # The question's filters (options.filters) let no document of its scope through.
    "no_filter_match",
    "no_match",
    "not_cited",
    "insufficient_information",
    "rag_disabled",
    "retrieval_unavailable",
]
Scope = Literal["message", "chat", "all"]
RetrievalMode = Literal["hybrid", "vector", "whole_documents"]
AnswerMode = Literal["generative", "extractive"]
# Why an answer was extractive: the setting or the message asked for it, the model is the
# built-in demo model, the model's grounded answer cited nothing, or it was nothing but passage
# numbers ("[1]"), asked for again and the same once more.
ExtractiveReason = Literal["requested", "builtin_model", "uncited", "bare"]
# What the documents were found to support: set on every answer that searched documents.
Evidence = Literal["answered", "partial", "not_in_documents"]


def _is_none(value: object) -> bool:
    return value is None


def _optional(description: str | None = None) -> Any:
    return Field(None, exclude_if=_is_none, description=description)


class ConflictSide(BaseModel):
    source: int = Field(description="The [n] of the answer's source that says it")
    value: str = Field(description="What that source says about the asked thing")
    date: str | None = Field(
        None,
        description="Its document's date (ISO 8601): the file's own date where it carries one, "
        "else its upload date",
    )
    newest: bool = Field(False, description="The most recently dated side")


class Conflict(BaseModel):
    """Sources of the answer that give different values for the asked thing."""

    about: str = Field(description="What they disagree on, in the question's words")
    sides: list[ConflictSide]


class CitedDocument(BaseModel):
    """A document a research answer cites, with its passages' citations."""

    document_id: str
    filename: str
    citations: list[int] = Field(description="The [n] of its passages, as in the answer")


class ResearchSearch(BaseModel):
    """One search of a research answer: the whole question, or one of its parts."""

    query: str = Field(description="What was searched: the question, or a part of it")
    part: str | None = Field(None, description="The part of the question, as it was asked")
    document: str | None = Field(
        None, description="The one document searched, when the search was limited to it"
    )
    passages: int = Field(description="Passages found")
    new: int = Field(description="Of those, passages no earlier search had found")


ResearchAction = Literal["search", "list", "read", "finish", "refused"]
# Why a researched answer's steps ended: the model called finish, it answered without calling
# finish, or its step or token budget ran out (the answer says what was not covered).
ResearchEnd = Literal["finished", "answered", "steps", "tokens"]


class StepPassage(BaseModel):
    """A passage a research step found or read: where it is, to open it."""

    document_id: str
    filename: str
    page: int | None = None
    location: str | None = None


class ResearchStep(BaseModel):
    """One step of a research answer with a model that calls tools, as a person follows it."""

    number: int = Field(description="1 for the first step")
    action: ResearchAction = Field(
        description="search (the documents), list (documents by name, kind, date...), read "
        "(a part of a document), finish, or refused (a call repeated, malformed, or naming a "
        "document the research was not shown)"
    )
    said: str = Field(
        description="The step in a sentence: \"Searched 'penalty clause': 4 passages\""
    )
    query: str | None = _optional("What was searched")
    filters: str | None = _optional("The filters of the search or the listing, in words")
    document: str | None = _optional("The document read, by name")
    passages: list[StepPassage] | None = _optional("What it found or read, to open")


class AnswerMeta(BaseModel):
    # Messages saved by older versions may carry keys this version does not know.
    model_config = ConfigDict(extra="allow")

    grounded: bool = Field(False, description="The answer cites the documents")
    reason: Reason | None = _optional("Why it is not grounded")
    scope: Scope | None = _optional(
        "Whose documents were searched: the message's, the chat's, or all the caller may read"
    )
    retrieval: Literal["auto", "tool"] | None = _optional()
    documents_searched: int | None = _optional()
    filters: str | None = _optional(
        "What narrowed the documents searched, in words: the filters of options.filters, else "
        "the documents, kinds or years the question named (RAG_NARROW_TO_NAMED)"
    )
    retrieval_mode: RetrievalMode | None = _optional()
    retrieval_count: int | None = _optional("Passages the model was given")
    retrieval_ms: float | None = _optional()
    reformulation_ms: float | None = _optional()
    translated_query: str | None = _optional(
        "The question as translated for the search and searched besides its own wording "
        "(RAG_TRANSLATE_QUESTIONS): its first translation, into the installation's language "
        "when it was translated into it (languages_searched lists every language)"
    )
    translated_by: Literal["model", "apertium", "dictionary"] | None = _optional(
        "What translated it: the connected model, Apertium (rule-based machine translation) "
        "or the installed dictionaries, word by word"
    )
    languages_searched: list[str] | None = _optional(
        "The languages the question was searched in (ISO 639-1 codes), its own first, then "
        "each it was translated into: the installation's and its documents' languages"
    )
    searched_as_written: list[str] | None = _optional(
        "Languages of the searched documents (ISO 639-1 codes) the question could not be "
        "translated into (no model and no dictionary for them, or the translation failed): "
        "their documents were searched with the question as written, which finds them by the "
        "names, numbers and terms it shares with them"
    )
    translation_ms: float | None = _optional()
    llm_ms: float | None = _optional("Time spent waiting for the model, every call included")
    context_chars: int | None = _optional()
    inline_documents: int | None = _optional(
        "Documents still processing whose text was read directly"
    )
    tool_searches: int | None = _optional()
    whole_document_chunks: int | None = _optional()
    map_reduce_calls: int | None = _optional("Model calls spent condensing whole documents")
    whole_documents_skipped: Literal["too_long"] | None = _optional()
    research: list[ResearchSearch] | None = _optional(
        "Research mode (options.research): each search made, the whole question first, then "
        "each part of it, with the passages it found; the answer was written from all of them"
    )
    research_steps: list[ResearchStep] | None = _optional(
        "Research mode with a model that calls tools: each step it took (searches with "
        "filters, document listings, parts read), in order; the answer cites what they found"
    )
    research_end: ResearchEnd | None = _optional(
        "Why the research stopped: finished (the model called finish), answered (it answered "
        "without; a reply that only spells out a tool call is not taken as the answer), steps "
        "or tokens (its budget ran out: the answer says what was not covered)"
    )
    cited_documents: list[CitedDocument] | None = _optional(
        "A research answer's citations grouped by document: each document with the [n] of "
        "its passages the answer cites"
    )
    answer_mode: AnswerMode | None = _optional(
        "extractive: the documents' best sentences quoted, no model call; generative: written "
        "by the model"
    )
    evidence: Evidence | None = _optional(
        "What the documents support, on every answer that searched them: answered; partial "
        "(they answer part of the question, the answer says which); not_in_documents (they do "
        "not answer it: the answer says so first, and any passages it shows are the nearest "
        "ones, not an answer)"
    )
    evidence_note: str | None = _optional(
        "Why the evidence is partial or not_in_documents, in the reader's words (\"none of the "
        'passages mentions 2019")'
    )
    conflicts: list[Conflict] | None = _optional(
        "Sources that disagree on the asked thing: each side with its citation and date, the "
        "newest marked; the answer's text gives both"
    )
    unsupported_citations: int | None = _optional(
        "Citation markers taken out of the answer because their passage does not support the "
        "sentence they followed"
    )
    extractive_reason: ExtractiveReason | None = _optional(
        "Why the answer is extractive: requested (setting or message), builtin_model (the "
        "demo model answers poorly), uncited (the model's answer cited nothing), bare (the "
        "model's answers were nothing but passage numbers such as [1], twice)"
    )
    answer_retried: bool | None = _optional(
        "The model's first answer was nothing but passage numbers (such as [1]): it was asked "
        "once more for a sentence, and this is the second answer (or, if that was bare too, "
        "the extractive one: extractive_reason bare)"
    )
    citation_count: int | None = _optional()
    citation_mode: Literal["model", "inferred"] | None = _optional(
        "inferred: the model wrote no markers, so docchat matched sentences to passages"
    )
    cached: bool | None = _optional(
        "Reused from the answer cache (RAG_ANSWER_CACHE): the same or nearly the same question "
        "with the same passages, history, model and settings; no model call, no quota tokens"
    )
    stopped: bool | None = _optional(
        "The answer was stopped before it finished (Stop, the answer time limit, or the "
        "server going away): the text is what had been written by then"
    )
    interrupted: bool | None = _optional(
        "Stopped because the process writing it went away (a restart or a crash)"
    )
