from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, SoftDeleteMixin, TimestampMixin


class Role(StrEnum):
    user = "user"
    admin = "admin"


class User(IdMixin, TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "users"

    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    display_name: Mapped[str] = mapped_column(String(100), default="")
    role: Mapped[Role] = mapped_column(String(16), default=Role.user)
    is_active: Mapped[bool] = mapped_column(default=True)
    preferred_model: Mapped[str | None] = mapped_column(String(200), default=None)
    # Carried by every token; raising it ends all of the user's sessions at once.
    session_generation: Mapped[int] = mapped_column(default=0, server_default="0")
    # API keys created up to this moment no longer work (see `end_credentials`).
    keys_revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    # Set by an administrator's temporary password: nothing else works until it is changed.
    must_change_password: Mapped[bool] = mapped_column(default=False, server_default="false")
    # Quotas; None takes the server's default (QUOTA_*), 0 means no limit.
    daily_token_limit: Mapped[int | None] = mapped_column(BigInteger, default=None)
    storage_limit_mb: Mapped[int | None] = mapped_column(default=None)
    # The person asked to delete the account, which holds documents others read: it waits for
    # an administrator to decide what happens to them (`account.deletion`).
    deletion_requested_at: Mapped[datetime | None] = mapped_column(default=None)

    @property
    def is_admin(self) -> bool:
        return self.role == Role.admin
