from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Identity, Index, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, SoftDeleteMixin, TimestampMixin

# The text search configuration of chat search (stemming: "ferries" finds "ferry").
SEARCH_CONFIG = "english"


class MessageRole(StrEnum):
    user = "user"
    assistant = "assistant"


class MessageStatus(StrEnum):
    """An answer is `streaming` from the moment its question is saved until it is finished,
    stopped or interrupted; every other message is `complete`."""

    streaming = "streaming"
    complete = "complete"


class Chat(IdMixin, TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "chats"
    __table_args__ = (
        Index("ix_chats_owner_id_updated_at", "owner_id", "updated_at"),
        Index("ix_chats_category_id", "category_id"),
    )

    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(String(200))
    category_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("categories.id", ondelete="SET NULL"), default=None
    )
    # Answer settings of this chat; None: the server's (or the user's) default.
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    strict: Mapped[bool | None] = mapped_column(default=None)
    # Earlier exchanges its questions remember; None: RAG_MAX_HISTORY_PAIRS.
    history_pairs: Mapped[int | None] = mapped_column(default=None)
    # The running summary of the exchanges up to `summary_through_seq` (`chats.summaries`).
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    summary_through_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    summary_updated_at: Mapped[datetime | None] = mapped_column(default=None)
    # Pinned chats head the list; archived ones leave it (a search still finds them) until
    # unarchived or asked a new question. Neither counts as activity.
    pinned_at: Mapped[datetime | None] = mapped_column(default=None)
    archived_at: Mapped[datetime | None] = mapped_column(default=None)
    # Shared read-only by link inside the installation: the link's secret id, and the last
    # message it shows (what is asked after sharing stays private until shared again).
    share_id: Mapped[uuid.UUID | None] = mapped_column(default=None, unique=True)
    shared_at: Mapped[datetime | None] = mapped_column(default=None)
    shared_through_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)


class Message(IdMixin, TimestampMixin, Base):
    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_chat_id_seq", "chat_id", "seq"),
        # Chat search (`chats.service.list_owned`): the same expression, so the index serves it.
        # The answers being written (a handful), for finding those a dead process left.
        Index(
            "ix_messages_superseded_by_id",
            "superseded_by_id",
            postgresql_where=text("superseded_by_id IS NOT NULL"),
        ),
        Index(
            "ix_messages_streaming",
            "updated_at",
            postgresql_where=text("status = 'streaming'"),
        ),
        Index(
            "ix_messages_content_search",
            text(f"to_tsvector('{SEARCH_CONFIG}'::regconfig, content)"),
            postgresql_using="gin",
        ),
    )

    chat_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    # Monotonic order within the database; timestamps can tie under concurrency.
    seq: Mapped[int] = mapped_column(BigInteger, Identity(), unique=True)
    role: Mapped[MessageRole] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    sources: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB, default=None)
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    latency_ms: Mapped[int | None] = mapped_column(default=None)
    prompt_tokens: Mapped[int | None] = mapped_column(default=None)
    completion_tokens: Mapped[int | None] = mapped_column(default=None)
    # Response metadata: grounded or not, and why (e.g. vector store down).
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSONB, default=None)
    status: Mapped[MessageStatus] = mapped_column(
        String(16), default=MessageStatus.complete, server_default=MessageStatus.complete.value
    )
    # Set by a Stop sent to any API process; the process writing the answer reads it.
    stop_requested: Mapped[bool] = mapped_column(default=False, server_default=text("false"))
    # An earlier version of an answer, kept when its question was regenerated: the answer that
    # replaced it (the latest). Such rows are not the conversation (`repository.messages_of`).
    superseded_by_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), default=None
    )


class Rating(StrEnum):
    up = "up"
    down = "down"


class AnswerFeedback(TimestampMixin, Base):
    """What the chat's owner thought of an answer: the material for judging answer quality
    (administrators read it with the question, the answer and its sources)."""

    __tablename__ = "answer_feedback"
    __table_args__ = (Index("ix_answer_feedback_rating_updated_at", "rating", "updated_at"),)

    message_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    rating: Mapped[Rating] = mapped_column(String(8))
    comment: Mapped[str | None] = mapped_column(Text, default=None)


class ChatDocument(Base):
    __tablename__ = "chat_documents"
    __table_args__ = (Index("ix_chat_documents_document_id", "document_id"),)

    chat_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True
    )
    document_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )


class MessageDocument(Base):
    __tablename__ = "message_documents"
    __table_args__ = (Index("ix_message_documents_document_id", "document_id"),)

    message_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    document_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )


class ChatCollection(Base):
    """A collection a chat is linked to: its documents are the chat's scope, as they are at
    each question (membership and contents are read then, never cached)."""

    __tablename__ = "chat_collections"
    __table_args__ = (Index("ix_chat_collections_collection_id", "collection_id"),)

    chat_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True
    )
    collection_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True
    )
