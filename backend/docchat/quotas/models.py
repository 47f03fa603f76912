from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, func
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, utcnow


class TokenHold(IdMixin, Base):
    """Tokens set aside for an answer in progress, counted against the daily quota until the
    answer's usage is recorded (then the hold goes). A hold left by a process that died counts
    until `expires_at`."""

    __tablename__ = "token_holds"
    __table_args__ = (Index("ix_token_holds_user_id_expires_at", "user_id", "expires_at"),)

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    tokens: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
    expires_at: Mapped[datetime]
