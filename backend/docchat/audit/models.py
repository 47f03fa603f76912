from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, utcnow


class AuditEntry(IdMixin, Base):
    """One security-relevant action. Rows are only ever added: a trigger refuses UPDATE and
    DELETE, and the API has no route that changes one.

    The actor is kept by id and by email (no foreign key), so an entry outlives its user."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_created_at", "created_at"),
        Index("ix_audit_log_action_created_at", "action", "created_at"),
        Index("ix_audit_log_actor_id_created_at", "actor_id", "created_at"),
        Index("ix_audit_log_target_id", "target_id"),
    )

    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
    action: Mapped[str] = mapped_column(String(64))
    actor_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    actor_email: Mapped[str | None] = mapped_column(String(320), default=None)
    target_type: Mapped[str | None] = mapped_column(String(32), default=None)
    target_id: Mapped[str | None] = mapped_column(String(64), default=None)
    address: Mapped[str | None] = mapped_column(String(64), default=None)
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
