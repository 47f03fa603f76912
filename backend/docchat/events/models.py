from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, TimestampMixin


class Event(IdMixin, TimestampMixin, Base):
    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_user_id", "user_id"),
        Index("ix_events_type", "type"),
        # A user's tokens today (quotas) read only that user's recent answers.
        Index("ix_events_user_id_type_created_at", "user_id", "type", "created_at"),
    )

    type: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
