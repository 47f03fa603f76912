from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import REAL, ForeignKey, Index, LargeBinary, String, Text, func
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, utcnow


class CachedAnswer(IdMixin, Base):
    """A model's answer kept for its asker's reuse (`answers.cache`): found by its asker, the
    key of everything that reached the model but the question's words, then by the question."""

    __tablename__ = "answer_cache"
    __table_args__ = (
        Index(
            "ix_answer_cache_user_id_context_key_created_at", "user_id", "context_key", "created_at"
        ),
        Index("ix_answer_cache_created_at", "created_at"),
    )

    # Whose question it answered: never reused for anyone else, removed with the account.
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    context_key: Mapped[bytes] = mapped_column(LargeBinary(32))
    question: Mapped[str] = mapped_column(Text)
    # The question lower-cased, without punctuation or articles: equal means the same question.
    normalised: Mapped[str] = mapped_column(Text)
    vector: Mapped[list[float]] = mapped_column(ARRAY(REAL))
    content: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(200))
    hits: Mapped[int] = mapped_column(default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
