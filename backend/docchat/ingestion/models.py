from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, TimestampMixin, utcnow


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
    )

    document_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
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
