from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.models import RefreshToken
from docchat.auth.ratelimit import LoginLimiter
from docchat.auth.schemas import RegisterRequest, TokenPair
from docchat.auth.security import create_token, decode_token, token_lifetime, verify_password
from docchat.config import AuthSettings
from docchat.db import utcnow
from docchat.kit.errors import Forbidden, Unauthorized
from docchat.users import repository as users_repository
from docchat.users import service as users_service
from docchat.users.models import User

INVALID_CREDENTIALS = "Incorrect email or password"
INVALID_REFRESH = "Invalid or expired refresh token"
REUSED_REFRESH = (
    "This refresh token was already used. For your safety every session from that login "
    "has been ended; please log in again"
)


async def register(session: AsyncSession, data: RegisterRequest, settings: AuthSettings) -> User:
    if not settings.registration_enabled:
        raise Forbidden("Registration is disabled on this server; ask an administrator")
    return await users_service.create(
        session, email=str(data.email), password=data.password, display_name=data.display_name
    )


async def issue_tokens(
    session: AsyncSession, user: User, settings: AuthSettings, family_id: uuid.UUID | None = None
) -> TokenPair:
    """An access token and a single-use refresh token (a new family unless one is given)."""
    now = datetime.now(UTC)
    record = RefreshToken(
        id=uuid.uuid4(),
        user_id=user.id,
        family_id=family_id or uuid.uuid4(),
        expires_at=now + token_lifetime("refresh", settings),
    )
    session.add(record)
    await session.flush()
    return TokenPair(
        access_token=create_token(user.id, "access", settings, now=now),
        refresh_token=create_token(user.id, "refresh", settings, now=now, jti=record.id),
        expires_in=settings.access_token_minutes * 60,
    )


async def login(
    session: AsyncSession,
    email: str,
    password: str,
    settings: AuthSettings,
    limiter: LoginLimiter,
    address: str,
) -> TokenPair:
    limiter.check(address, email)
    user = await users_repository.get_by_email(session, email)
    # Same message (and same hashing work) whether the email exists or not.
    password_ok = verify_password(password, user.password_hash if user else None)
    if user is None or not password_ok or not user.is_active:
        limiter.failed(address, email)
        raise Unauthorized(INVALID_CREDENTIALS)
    limiter.succeeded(address, email)
    return await issue_tokens(session, user, settings)


async def _revoke_family(session: AsyncSession, family_id: uuid.UUID) -> None:
    await session.execute(
        update(RefreshToken)
        .where(RefreshToken.family_id == family_id, RefreshToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


async def _stored_token(
    session: AsyncSession, refresh_token: str, settings: AuthSettings
) -> RefreshToken | None:
    claims = decode_token(refresh_token, "refresh", settings)
    if claims is None:
        return None
    try:
        token_id = uuid.UUID(hex=claims.jti)
    except ValueError:
        return None
    record = await session.get(RefreshToken, token_id, with_for_update=True)
    return record if record is not None and record.user_id == claims.user_id else None


async def refresh(session: AsyncSession, refresh_token: str, settings: AuthSettings) -> TokenPair:
    record = await _stored_token(session, refresh_token, settings)
    if record is None:
        raise Unauthorized(INVALID_REFRESH)
    if record.used_at is not None or record.revoked_at is not None:
        await _revoke_family(session, record.family_id)
        # The revocation must outlive the 401 this request ends with.
        await session.commit()
        raise Unauthorized(REUSED_REFRESH)
    user = await users_repository.get_active(session, record.user_id)
    if user is None:
        raise Unauthorized(INVALID_REFRESH)
    record.used_at = utcnow()
    return await issue_tokens(session, user, settings, family_id=record.family_id)


async def logout(session: AsyncSession, refresh_token: str, settings: AuthSettings) -> None:
    """End the login the refresh token belongs to (idempotent; unknown tokens are ignored)."""
    record = await _stored_token(session, refresh_token, settings)
    if record is not None:
        await _revoke_family(session, record.family_id)


async def authenticate(session: AsyncSession, access_token: str, settings: AuthSettings) -> User:
    claims = decode_token(access_token, "access", settings)
    user = await users_repository.get_active(session, claims.user_id) if claims else None
    if user is None:
        raise Unauthorized("Invalid or expired token")
    return user
