from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, func
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, utcnow


class ExternalIdentity(IdMixin, Base):
    """An account's name in an identity source: the directory entry (by its stable id) that
    logs in as it. A person is found by this link first, so a changed e-mail in the directory
    does not make a second account."""

    __tablename__ = "external_identities"
    __table_args__ = (
        Index("uq_external_identities_subject", "provider", "subject", unique=True),
        Index("ix_external_identities_user_id", "user_id"),
    )

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    provider: Mapped[str] = mapped_column(String(32))  # "ldap"
    subject: Mapped[str] = mapped_column(String(512))  # entryUUID (or the DN when none)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
    last_login_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())


class RedeemedCode(Base):
    """A single sign-on code this server traded at the provider, kept a minute: a second
    return with the same code (a browser that requested the address twice) gets the first
    one's outcome instead of spending the code again. Digests only: neither the code nor the
    state is kept."""

    __tablename__ = "sso_redeemed_codes"
    __table_args__ = (Index("ix_sso_redeemed_codes_created_at", "created_at"),)

    code_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    state_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
    # None while the first request is at the provider; then signed_in, refused or unavailable.
    outcome: Mapped[str | None] = mapped_column(String(16), default=None)
    reason: Mapped[str] = mapped_column(String(500), default="", server_default="")
    user_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), default=None
    )
