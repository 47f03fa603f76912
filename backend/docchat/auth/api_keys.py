"""Personal API keys: created by their user, shown once, stored as a hash, revocable.

A key is `dck_` and 43 URL-safe characters (256 random bits). It is accepted wherever a bearer
token is, on `/api/v1` and on `/v1`, within its scopes; it stops working when it is revoked,
expires, or its user is deactivated or promoted by `docchat create-admin`, and a key that
stopped for either of those reasons stays revoked.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.auth import repository
from docchat.auth.models import ApiKey
from docchat.auth.scopes import Scope
from docchat.db import utcnow
from docchat.kit.errors import Forbidden, NotFound, Unauthorized
from docchat.users import repository as users_repository
from docchat.users.models import User

KEY_PREFIX = "dck_"
SHOWN_CHARS = 12  # `dck_` and 8 characters: enough to tell keys apart in a list
# last_used_at is written at most this often per key, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)
INVALID_KEY = "Invalid, expired or revoked API key"


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


async def create(
    session: AsyncSession,
    user: User,
    *,
    name: str,
    scopes: Sequence[Scope],
    expires_at: datetime | None,
    address: str | None,
) -> tuple[ApiKey, str]:
    """A new key and its secret (the only time the secret exists outside the client)."""
    if Scope.admin in scopes and not user.is_admin:
        raise Forbidden("Only administrators can create keys with the admin scope")
    if expires_at is not None and expires_at <= utcnow():
        raise Forbidden("The expiry date must be in the future")
    secret = _new_secret()
    key = ApiKey(
        user_id=user.id,
        name=name.strip(),
        prefix=secret[:SHOWN_CHARS],
        secret_hash=_digest(secret),
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
    )
    repository.add_api_key(session, key)
    await session.flush()
    await audit.record(
        session,
        audit.AuditAction.api_key_created,
        actor=user,
        target=("api_key", key.id),
        address=address,
        name=key.name,
        prefix=key.prefix,
        scopes=key.scopes,
    )
    return key, secret


def _ended_with_account(key: ApiKey, user: User) -> bool:
    """Made before the account's credentials were all ended (deactivation, promotion)."""
    return user.keys_revoked_at is not None and key.created_at <= user.keys_revoked_at


async def list_for(session: AsyncSession, user: User) -> Sequence[ApiKey]:
    """The user's keys, revoked ones included (so a list explains why a script stopped)."""
    keys = await repository.api_keys_of(session, user.id)
    for key in keys:
        if key.revoked_at is None and _ended_with_account(key, user):
            key.revoked_at = user.keys_revoked_at
    await session.flush()
    return keys


async def revoke(
    session: AsyncSession, user: User, key_id: uuid.UUID, *, address: str | None
) -> None:
    key = await repository.lock_api_key(session, key_id)
    if key is None or key.user_id != user.id:
        raise NotFound("API key not found")
    if key.revoked_at is not None:
        return
    key.revoked_at = utcnow()
    await audit.record(
        session,
        audit.AuditAction.api_key_revoked,
        actor=user,
        target=("api_key", key.id),
        address=address,
        prefix=key.prefix,
    )


async def authenticate(
    session: AsyncSession, secret: str, needed: Scope | frozenset[Scope] | None
) -> User:
    """The user a key acts for, if it is live and its scopes cover `needed` (a set: any one
    of them)."""
    key = await repository.api_key_by_digest(session, _digest(secret))
    now = utcnow()
    if (
        key is None
        or key.revoked_at is not None
        or (key.expires_at is not None and key.expires_at <= now)
    ):
        raise Unauthorized(INVALID_KEY)
    user = await users_repository.get_active(session, key.user_id)
    if user is None or _ended_with_account(key, user):
        raise Unauthorized(INVALID_KEY)
    if needed is None:
        raise Forbidden("API keys cannot be used here; log in with your password")
    accepted = needed if isinstance(needed, frozenset) else frozenset({needed})
    if not accepted & set(key.scopes):
        named = " or ".join(f"'{scope}'" for scope in sorted(accepted))
        raise Forbidden(f"This API key lacks the {named} scope")
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        key.last_used_at = now
        await session.flush()
    return user
