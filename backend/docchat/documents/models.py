from __future__ import annotations

import uuid
from enum import StrEnum

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, SoftDeleteMixin, TimestampMixin


class Visibility(StrEnum):
    private = "private"
    shared = "shared"


class DocumentStatus(StrEnum):
    processing = "processing"
    completed = "completed"
    failed = "failed"


class Document(IdMixin, TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "documents"
    __table_args__ = (
        Index("ix_documents_owner_id", "owner_id"),
        Index("ix_documents_category_id", "category_id"),
        Index("ix_documents_visibility", "visibility"),
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
    status: Mapped[DocumentStatus] = mapped_column(String(16), default=DocumentStatus.processing)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    page_count: Mapped[int | None] = mapped_column(default=None)
    chunk_count: Mapped[int | None] = mapped_column(default=None)
    # Progress while processing: pages extracted and chunks embedded so far.
    pages_done: Mapped[int] = mapped_column(default=0)
    chunks_done: Mapped[int] = mapped_column(default=0)
