"""Sources that feed a collection, and the items each has brought in."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, TimestampMixin


class SourceState(StrEnum):
    idle = "idle"  # waiting for its next sync
    syncing = "syncing"  # a worker holds it (`claim_token`), beating `heartbeat_at`
    failing = "failing"  # its last sync could not list it: tried again later, backing off
    paused = "paused"  # no sync until it is resumed
    # Deleted with its documents: a worker removes them item by item, then the source.
    removing = "removing"


class Source(IdMixin, TimestampMixin, Base):
    """A folder, bucket prefix, website or repository whose files a collection holds, kept in
    step by incremental syncs. Its items become documents of `owner_id` (whose storage quota
    they count against) in `collection_id`, readable by whoever reads the collection."""

    __tablename__ = "sources"
    __table_args__ = (
        Index("ix_sources_collection_id", "collection_id"),
        # The scheduler's question: which sources are due (idle, failing or being removed).
        Index(
            "ix_sources_due",
            "next_sync_at",
            postgresql_where=text("state IN ('idle', 'failing', 'removing')"),
        ),
    )

    collection_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE")
    )
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200))
    # What the kind needs that is no secret (a path, a bucket and prefix, a URL).
    settings: Mapped[dict[str, str]] = mapped_column(JSONB, default=dict)
    # Credentials (access keys, tokens), encrypted with the installation's key; never returned.
    secrets: Mapped[str | None] = mapped_column(Text, default=None)
    # Minutes between syncs; None syncs only when asked ("Sync now").
    interval_minutes: Mapped[int | None] = mapped_column(default=None)
    state: Mapped[SourceState] = mapped_column(String(16), default=SourceState.idle)
    next_sync_at: Mapped[datetime | None] = mapped_column(default=None)
    last_started_at: Mapped[datetime | None] = mapped_column(default=None)
    last_finished_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    # Syncs in a row that could not list the source (the backoff grows with it).
    failures: Mapped[int] = mapped_column(default=0, server_default="0")
    # The running or last sync's counts: listed, added, changed, removed, unchanged, failed.
    progress: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    claim_token: Mapped[uuid.UUID | None] = mapped_column(default=None)
    heartbeat_at: Mapped[datetime | None] = mapped_column(default=None)

    @property
    def has_secrets(self) -> bool:
        return bool(self.secrets)


class SourceItem(IdMixin, Base):
    """One file of a source as the last sync left it: its key in the source, the version it
    had, and the document it is (None while it failed before becoming one)."""

    __tablename__ = "source_items"
    __table_args__ = (
        Index("uq_source_items_source_key", "source_id", "key", unique=True),
        Index("ix_source_items_document_id", "document_id"),
    )

    source_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(Text)
    version: Mapped[str] = mapped_column(Text)
    document_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("documents.id", ondelete="SET NULL"), default=None
    )
    # Why this item could not be brought in by the last sync (tried again at the next).
    error: Mapped[str | None] = mapped_column(Text, default=None)
    synced_at: Mapped[datetime | None] = mapped_column(default=None)
