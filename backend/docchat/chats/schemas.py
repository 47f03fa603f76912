from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from docchat.answers.meta import AnswerMeta, ResearchStep
from docchat.chats.models import MessageRole, MessageStatus, Rating
from docchat.kit.openapi import schema_ref
from docchat.kit.schemas import RequestModel
from docchat.retrieval.filters import FilterFields
from docchat.retrieval.schemas import Source

MAX_DOCUMENTS_PER_MESSAGE = 50


class ChatCreate(RequestModel):
    title: str | None = Field(None, max_length=200)
    category_id: uuid.UUID | None = None
    document_ids: list[uuid.UUID] = Field(
        default_factory=list, max_length=MAX_DOCUMENTS_PER_MESSAGE
    )
    collection_ids: list[uuid.UUID] = Field(
        default_factory=list, max_length=MAX_DOCUMENTS_PER_MESSAGE
    )


class ChatUpdate(RequestModel):
    title: str | None = Field(None, min_length=1, max_length=200)
    category_id: uuid.UUID | None = None
    model: str | None = Field(
        None,
        max_length=200,
        description="The model this chat's answers use (one of GET /chats/answer-settings); "
        "null: the default",
    )
    strict: bool | None = Field(
        None, description="Documents only (no citation, no answer); null: the server's default"
    )
    history_pairs: int | None = Field(
        None,
        ge=0,
        description="Earlier question/answer pairs this chat's questions remember, at most "
        "`history_pairs_limit` of GET /chats/answer-settings (0: none); null: the default",
    )
    pinned: bool | None = Field(None, description="Pinned chats head the list")
    archived: bool | None = Field(
        None,
        description="Archived chats leave the list (a search still finds them); asking a new "
        "question in one unarchives it",
    )


class ChatRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    title: str
    category_id: uuid.UUID | None
    model: str | None = Field(description="This chat's model; null: the default")
    strict: bool | None = Field(description="This chat's strict mode; null: the server's default")
    history_pairs: int | None = Field(
        description="Earlier pairs this chat's questions remember; null: the default"
    )
    pinned_at: datetime | None = Field(description="When it was pinned; null: not pinned")
    archived_at: datetime | None = Field(description="When it was archived; null: not archived")
    share_id: uuid.UUID | None = Field(
        description="Shared read-only by link: the link's id (`/shared/{share_id}` in the web "
        "app, GET /shared-chats/{share_id} in the API); null: not shared"
    )
    shared_at: datetime | None = Field(description="When the link was made or last updated")
    created_at: datetime
    updated_at: datetime
    snippet: str | None = Field(
        None,
        description="In a search (`q`): the words around the match in the chat's latest "
        "matching message (none when only the title matched)",
    )


class AnswerDefaults(BaseModel):
    """What a chat's answers use when it sets nothing, and what it may choose."""

    model: str = Field(
        description="The model used when a chat names none (yours, if you chose one)"
    )
    models: list[str] = Field(description="The models a chat may use")
    strict: bool = Field(description="Whether answers are documents-only unless a chat says")
    history_pairs: int = Field(description="Earlier pairs a question remembers unless a chat says")
    history_pairs_limit: int = Field(description="The most earlier pairs a chat may choose")


class LinkedDocument(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    filename: str


class ChatDetail(ChatRead):
    summary: str | None = Field(
        description="The running summary of the exchanges this chat's questions no longer "
        "send whole (written after an answer; null: none yet)"
    )
    summary_updated_at: datetime | None = Field(description="When the summary was last written")
    document_ids: list[uuid.UUID]
    documents: list[LinkedDocument] = Field(
        description="The linked documents you may still read, with their names, by name"
    )
    collection_ids: list[uuid.UUID] = Field(
        description="Linked collections you may still read; their documents are the chat's scope"
    )


class ChatDocumentsLink(RequestModel):
    document_ids: list[uuid.UUID] = Field(min_length=1, max_length=MAX_DOCUMENTS_PER_MESSAGE)


class MessageOptions(RequestModel):
    """Per-request switches; anything left out takes the server's default."""

    rag_enabled: bool | None = None
    top_k: int | None = Field(None, ge=1, le=20)
    model: str | None = Field(None, max_length=200)
    strict: bool | None = Field(None, description="Documents only: no citation, no answer")
    reformulate: bool | None = Field(None, description="Rewrite the question before searching")
    retrieval: Literal["auto", "tool"] | None = Field(
        None, description="auto: search first; tool: the model calls semantic_search"
    )
    answer_mode: Literal["auto", "generative", "extractive"] | None = Field(
        None,
        description=(
            "extractive: quote the documents' best sentences, no model call; generative: the "
            "model writes; auto: the server's choice (RAG_ANSWER_MODE)"
        ),
    )
    research: bool | None = Field(
        None,
        description=(
            'Research mode: a question of several parts ("what does A do, and when did B '
            '...", "X or Y?") is searched part by part as well as whole, and answered from '
            "all the passages found; meta.research lists each search. With a model that calls "
            "tools, the model then researches further (searches with filters, document "
            "listings, parts read), each step streamed as a `step` event and kept in "
            "meta.research_steps"
        ),
    )
    filters: FilterFields | None = Field(
        None, description="Search only the documents that match (name, kind, dates...)"
    )


class MessageCreate(RequestModel):
    chat_id: uuid.UUID | None = None
    content: str = Field(min_length=1)
    document_ids: list[uuid.UUID] = Field(
        default_factory=list, max_length=MAX_DOCUMENTS_PER_MESSAGE
    )
    collection_ids: list[uuid.UUID] = Field(
        default_factory=list,
        max_length=MAX_DOCUMENTS_PER_MESSAGE,
        description="Collections whose documents this message searches (with document_ids)",
    )
    category_id: uuid.UUID | None = None
    options: MessageOptions = Field(default_factory=MessageOptions)
    replaces: uuid.UUID | None = Field(
        None,
        description=(
            "Edit or regenerate: one of the chat's questions (with chat_id). Once this "
            "message's answer is saved, that question and every message after it are removed; "
            "until then they stay, so a failed answer loses nothing. The question's documents "
            "are used again unless document_ids or collection_ids are given"
        ),
    )

    @model_validator(mode="after")
    def _replaces_needs_chat(self) -> MessageCreate:
        if self.replaces is not None and self.chat_id is None:
            raise ValueError("replaces needs the chat_id of the chat the question is in")
        return self

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value


class FeedbackWrite(RequestModel):
    rating: Rating
    comment: str | None = Field(
        None, max_length=2000, description="What was good or wrong (optional)"
    )


class FeedbackRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    rating: Rating
    comment: str | None
    updated_at: datetime


class FeedbackEntry(BaseModel):
    """A rated answer as administrators review it: with its question, answer and sources."""

    message_id: uuid.UUID
    chat_id: uuid.UUID
    user_id: uuid.UUID
    user_email: str
    rating: Rating
    comment: str | None
    question: str | None = Field(description="The question the answer replied to")
    answer: str
    sources: list[Source] | None
    model: str | None
    answered_at: datetime
    updated_at: datetime = Field(description="When the rating was given or last changed")


class AnswerVersion(BaseModel):
    """An earlier answer to the same question, kept when it was regenerated."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    content: str
    sources: list[Source] | None
    model: str | None
    meta: AnswerMeta | None
    created_at: datetime


class MessageRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    chat_id: uuid.UUID
    role: MessageRole
    content: str
    sources: list[Source] | None
    model: str | None
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    meta: AnswerMeta | None = Field(description="About the answer (assistant messages)")
    status: MessageStatus = Field(
        MessageStatus.complete,
        description="streaming: the answer is still being written (content is its text so "
        "far; follow it with GET /messages/{id}/stream); complete otherwise",
    )
    created_at: datetime
    feedback: FeedbackRead | None = Field(
        None, description="Your rating of this answer, if you gave one (chat message lists)"
    )
    versions: list[AnswerVersion] = Field(
        default_factory=list,
        description="Earlier answers to the same question, oldest first (each regeneration of "
        "the chat's last question keeps the answer it replaces); this message is the latest",
    )


class MessageExchange(BaseModel):
    chat_id: uuid.UUID
    user_message: MessageRead
    assistant_message: MessageRead


# -- the events of POST /messages/stream (Server-Sent Events, in this order) ------------------


class StreamMeta(BaseModel):
    """`event: meta`: the chat and the saved user message, first."""

    chat_id: uuid.UUID
    user_message: MessageRead
    assistant_message_id: uuid.UUID = Field(
        description="The answer's id: follow it again with GET /messages/{id}/stream, stop it "
        "with POST /messages/{id}/stop"
    )


class StreamSources(AnswerMeta):
    """`event: sources`: the passages the model was given, numbered as in the prompt, with
    what is known about the answer so far."""

    sources: list[Source]


class StreamStep(ResearchStep):
    """`event: step`: a step of a research answer (options.research with a model that calls
    tools), as it is taken, before the `sources` event; a reader that comes back is told every
    step again."""


class StreamDelta(BaseModel):
    """`event: delta`: the next piece of the answer's text."""

    text: str


class StreamDone(BaseModel):
    """`event: done`: the saved answer (citations renumbered), last."""

    assistant_message: MessageRead


class StreamError(BaseModel):
    """`event: error`: the answer failed (or was stopped before its first word, 410); the
    question is kept, no answer is. Last."""

    detail: str
    status: int


STREAM_EVENTS: dict[str, type[BaseModel]] = {
    "meta": StreamMeta,
    "step": StreamStep,
    "sources": StreamSources,
    "delta": StreamDelta,
    "done": StreamDone,
    "error": StreamError,
}
# The `text/event-stream` body of POST /messages/stream, as OpenAPI describes it.
STREAM_EVENT_SCHEMA = {"oneOf": [schema_ref(model) for model in STREAM_EVENTS.values()]}


# -- chats shared by link ---------------------------------------------------------------------


class SharedChat(BaseModel):
    """A chat someone shared by link: what its readers see of it."""

    title: str
    owner_name: str = Field(description="Who shared it (their display name, or e-mail)")
    shared_at: datetime
    yours: bool = Field(description="You shared it")


class SharedMessage(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    role: MessageRole
    content: str
    sources: list[Source | None] | None = Field(
        description="The answer's sources in citation order; null in the place of one whose "
        "document you may not read"
    )
    stopped: bool = Field(False, description="The answer was stopped before it finished")
    created_at: datetime
