from __future__ import annotations

import uuid
from datetime import date, datetime
from enum import StrEnum

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, SoftDeleteMixin, TimestampMixin, utcnow


class Visibility(StrEnum):
    private = "private"
    shared = "shared"


class DocumentStatus(StrEnum):
    # Waiting for a worker (`queue_position` says how many documents go first), then read.
    queued = "queued"
    processing = "processing"
    completed = "completed"
    failed = "failed"


class Document(IdMixin, TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "documents"
    __table_args__ = (
        Index("ix_documents_owner_id", "owner_id"),
        Index("ix_documents_category_id", "category_id"),
        Index("ix_documents_visibility", "visibility"),
        # The owners of documents shared with everyone, one index step each (`scopes`).
        Index(
            "ix_documents_shared_owner",
            "owner_id",
            postgresql_where=text(
                "visibility = 'shared' AND status = 'completed' AND deleted_at IS NULL"
            ),
        ),
    )

    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    category_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("categories.id", ondelete="SET NULL"), default=None
    )
    visibility: Mapped[Visibility] = mapped_column(String(16), default=Visibility.private)
    filename: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(100))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(200))
    status: Mapped[DocumentStatus] = mapped_column(String(16), default=DocumentStatus.queued)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    page_count: Mapped[int | None] = mapped_column(default=None)
    chunk_count: Mapped[int | None] = mapped_column(default=None)
    # Words in all its chunks (set at completion): BM25's collection statistics for a scope
    # come from these per-document sums instead of from every chunk of the scope.
    token_count: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # Progress while processing: pages extracted and chunks embedded so far.
    pages_done: Mapped[int] = mapped_column(default=0)
    chunks_done: Mapped[int] = mapped_column(default=0)
    # Which content answers: 1 for the first upload, +1 for each new version that completed
    # (`versioned_at`: when it took over; None for the first).
    version: Mapped[int] = mapped_column(default=1, server_default="1")
    versioned_at: Mapped[datetime | None] = mapped_column(default=None)
    # The document's own date (`extraction.dates`): what its file says (PDF, Office and
    # OpenDocument properties, EPUB, HTML meta), else when its source last changed it (a
    # synced folder, bucket or site); None when neither says. Shown to the model with its
    # passages, beside when it was uploaded.
    document_date: Mapped[date | None] = mapped_column(default=None)


class DocumentVersion(IdMixin, TimestampMixin, Base):
    """A new file for a document, read beside the current one: the document keeps answering
    from its current content until this one completes, then takes it over in one step."""

    __tablename__ = "document_versions"
    __table_args__ = (Index("ix_document_versions_document_id", "document_id"),)

    document_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    number: Mapped[int]
    filename: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(100))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(200))
    status: Mapped[DocumentStatus] = mapped_column(String(16), default=DocumentStatus.queued)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    chunk_count: Mapped[int | None] = mapped_column(default=None)
    chunks_done: Mapped[int] = mapped_column(default=0)
    # When its source last changed it, if the source says; the file's own date, once read,
    # goes before it (`Document.document_date`).
    document_date: Mapped[date | None] = mapped_column(default=None)


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


class IngestionJob(IdMixin, TimestampMixin, Base):
    """One request to (re)process a document; claimed with FOR UPDATE SKIP LOCKED."""

    __tablename__ = "ingestion_jobs"
    __table_args__ = (
        Index("ix_ingestion_jobs_document_id", "document_id"),
        Index("ix_ingestion_jobs_status_available_at", "status", "available_at"),
        # The fair claim reads each owner's running jobs and when the owner was last served.
        Index("ix_ingestion_jobs_running", "owner_id", postgresql_where=text("status = 'running'")),
        Index("ix_ingestion_jobs_owner_claimed_at", "owner_id", "claimed_at"),
        # Each owner's queue in claim order, queued jobs only (`jobs_repository.claim_next`).
        Index(
            "ix_ingestion_jobs_queued",
            "owner_id",
            "available_at",
            "created_at",
            "id",
            postgresql_where=text("status = 'queued'"),
        ),
    )

    document_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    # Set when the job reads a new version of the document rather than the document itself.
    version_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("document_versions.id", ondelete="CASCADE"), default=None
    )
    # The document's owner: workers take turns between owners (see `claim_next`).
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    status: Mapped[JobStatus] = mapped_column(String(16), default=JobStatus.queued)
    attempts: Mapped[int] = mapped_column(default=0)
    available_at: Mapped[datetime] = mapped_column(default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(default=None)
    claimed_by: Mapped[str | None] = mapped_column(String(200), default=None)
    # Fencing: only the worker holding this token may write the job's progress and results.
    claim_token: Mapped[uuid.UUID | None] = mapped_column(default=None)
    # Refreshed while the job runs; a running job whose heartbeat stopped is taken again.
    heartbeat_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
