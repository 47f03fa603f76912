from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.auth import repository
from docchat.auth.models import RefreshToken
from docchat.auth.ratelimit import LoginLimiter, SignupLimiter
from docchat.auth.schemas import PasswordChange, RegisterRequest, RegistrationReceived, TokenPair
from docchat.auth.security import TokenClaims, create_token, decode_token, token_lifetime
from docchat.config import AuthSettings
from docchat.db import utcnow
from docchat.kit.errors import Forbidden, Unauthorized, Unprocessable
from docchat.users import repository as users_repository
from docchat.users import service as users_service
from docchat.users.models import User
from docchat.users.passwords import (
    NO_PASSWORD,
    hash_password,
    personal_words,
    verify_password,
    weakness,
)

INVALID_CREDENTIALS = "Incorrect email or password"
DEACTIVATED = "This account has been deactivated: ask an administrator to reactivate it"
INVALID_REFRESH = "Invalid or expired refresh token"
REUSED_REFRESH = (
    "This refresh token was already used. For your safety every session from that login "
    "has been ended; please log in again"
)


SET_BY_ADMIN = (
    "Your password was set by an administrator: choose a new one first "
    "(POST /api/v1/users/me/password)"
)
DIRECTORY_PASSWORD = "Your password is kept by your organisation's directory: change it there"  # noqa: S105
REGISTRATION_RECEIVED = "Registration received: log in with this email and password"
WRONG_CURRENT_PASSWORD = "The current password is not correct"  # noqa: S105
TOO_MANY_WRONG_PASSWORDS = "Too many wrong passwords; try again later"


async def register(
    session: AsyncSession,
    data: RegisterRequest,
    settings: AuthSettings,
    limiter: SignupLimiter,
    address: str,
) -> RegistrationReceived:
    """The same answer whether or not the email already had an account (no enumeration)."""
    if not settings.registration_enabled or not settings.password_login:
        raise Forbidden("Registration is disabled on this server; ask an administrator")
    limiter.check_and_count(address)
    await users_service.register(
        session, email=str(data.email), password=data.password, display_name=data.display_name
    )
    return RegistrationReceived(email=str(data.email).lower(), detail=REGISTRATION_RECEIVED)


async def issue_tokens(
    session: AsyncSession,
    user: User,
    settings: AuthSettings,
    family_id: uuid.UUID | None = None,
    refresh_lifetime: timedelta | None = None,
) -> TokenPair:
    """An access token and a single-use refresh token (a new family unless one is given; a
    shorter life than the usual one for a ticket meant to be traded at once)."""
    now = datetime.now(UTC)
    lifetime = refresh_lifetime or token_lifetime("refresh", settings)
    record = RefreshToken(
        id=uuid.uuid4(),
        user_id=user.id,
        family_id=family_id or uuid.uuid4(),
        expires_at=now + lifetime,
    )
    await repository.add_refresh_token(session, record)
    generation = user.session_generation
    return TokenPair(
        access_token=create_token(user.id, "access", settings, now=now, generation=generation),
        refresh_token=create_token(
            user.id,
            "refresh",
            settings,
            now=now,
            jti=record.id,
            generation=generation,
            lifetime=lifetime,
        ),
        expires_in=settings.access_token_minutes * 60,
        password_change_required=user.must_change_password,
    )


async def login(
    session: AsyncSession,
    email: str,
    password: str,
    settings: AuthSettings,
    limiter: LoginLimiter,
    address: str,
) -> TokenPair:
    """A login with the account's own password."""
    limiter.check(address, email)
    user = await users_repository.get_by_email(session, email)
    # Same message (and same hashing work) whether the email exists or not.
    password_ok = await verify_password(password, user.password_hash if user else None)
    if user is None or not password_ok or not user.is_active:
        reason = "unknown email" if user is None else "inactive" if password_ok else "password"
        await refuse_login(session, limiter, address, email, user, reason)
        if user is not None and password_ok:
            # Only someone who knows the password learns the account exists, and why they
            # cannot log in (issue 40: they were told their password was wrong).
            raise Forbidden(DEACTIVATED)
        raise Unauthorized(INVALID_CREDENTIALS)
    return await accept_login(session, user, settings, limiter, address, email)


async def refuse_login(
    session: AsyncSession,
    limiter: LoginLimiter,
    address: str,
    name: str,
    user: User | None,
    reason: str,
) -> None:
    """Count and record a failed login (committed: the entry must outlive the 4xx's rollback);
    the caller raises the answer."""
    limiter.failed(address, name)
    await audit.record(
        session,
        audit.AuditAction.login_failed,
        actor=None,
        actor_email=name.lower(),  # kept as audit_text, cut to 320
        target=("user", user.id) if user else None,
        address=address,
        reason=reason,
    )
    await session.commit()


async def accept_login(
    session: AsyncSession,
    user: User,
    settings: AuthSettings,
    limiter: LoginLimiter,
    address: str,
    name: str,
    **detail: str,
) -> TokenPair:
    """Record a successful login as `name` and issue its tokens."""
    limiter.succeeded(address, name)
    await record_login(session, user, address, **detail)
    return await issue_tokens(session, user, settings)


async def record_login(session: AsyncSession, user: User, address: str, **detail: str) -> None:
    """The audit log's entry for a login, whichever way it came (`via`)."""
    await audit.record(
        session,
        audit.AuditAction.login,
        actor=user,
        target=("user", user.id),
        address=address,
        **detail,
    )


async def confirm_password(
    session: AsyncSession,
    user: User,
    password: str | None,
    *,
    limiter: LoginLimiter,
    address: str,
    purpose: str,
    refusal: str,
) -> None:
    """The signed-in person's own password, asked again before an act a stolen token alone
    must not do (changing the password, deleting the account). Guesses are throttled like
    logins, on the same counts (one password, whichever door it is guessed at): 429 with
    Retry-After; each wrong one is recorded in the audit log (committed, so it outlives the
    403's rollback)."""
    limiter.check(address, user.email, TOO_MANY_WRONG_PASSWORDS)
    if password and await verify_password(password, user.password_hash):
        limiter.succeeded(address, user.email)
        return
    limiter.failed(address, user.email)
    await audit.record(
        session,
        audit.AuditAction.password_check_failed,
        actor=user,
        target=("user", user.id),
        address=address,
        purpose=purpose,
    )
    await session.commit()
    raise Forbidden(refusal)


async def change_password(
    session: AsyncSession,
    user: User,
    data: PasswordChange,
    settings: AuthSettings,
    limiter: LoginLimiter,
    address: str,
) -> TokenPair:
    """Set a new password. Every session of the account ends (a thief's too) but the caller's,
    which gets a new token pair; API keys are separate credentials and keep working."""
    if user.password_hash == NO_PASSWORD:
        raise Forbidden(DIRECTORY_PASSWORD)
    await confirm_password(
        session,
        user,
        data.current_password,
        limiter=limiter,
        address=address,
        purpose="password change",
        refusal=WRONG_CURRENT_PASSWORD,
    )
    problem = weakness(data.new_password, related=personal_words(user.email, user.display_name))
    if problem:
        raise Unprocessable(problem)
    user.password_hash = await hash_password(data.new_password)
    user.must_change_password = False
    await users_service.end_sessions(session, user)
    await audit.record(
        session,
        audit.AuditAction.password_changed,
        actor=user,
        target=("user", user.id),
        address=address,
    )
    return await issue_tokens(session, user, settings)


async def _stored_token(
    session: AsyncSession, refresh_token: str, settings: AuthSettings
) -> tuple[RefreshToken, TokenClaims] | None:
    claims = decode_token(refresh_token, "refresh", settings)
    if claims is None:
        return None
    try:
        token_id = uuid.UUID(hex=claims.jti)
    except ValueError:
        return None
    record = await repository.get_for_update(session, token_id)
    if record is None or record.user_id != claims.user_id:
        return None
    return record, claims


async def refresh(session: AsyncSession, refresh_token: str, settings: AuthSettings) -> TokenPair:
    stored = await _stored_token(session, refresh_token, settings)
    if stored is None:
        raise Unauthorized(INVALID_REFRESH)
    record, claims = stored
    if record.used_at is not None or record.revoked_at is not None:
        await repository.revoke_family(session, record.family_id)
        # The revocation must outlive the 401 this request ends with.
        await session.commit()
        raise Unauthorized(REUSED_REFRESH)
    user = await users_repository.get_active(session, record.user_id)
    if user is None or user.session_generation != claims.generation:
        raise Unauthorized(INVALID_REFRESH)
    record.used_at = utcnow()
    return await issue_tokens(session, user, settings, family_id=record.family_id)


async def logout(session: AsyncSession, refresh_token: str, settings: AuthSettings) -> None:
    """End the login the refresh token belongs to (idempotent; unknown tokens are ignored)."""
    stored = await _stored_token(session, refresh_token, settings)
    if stored is not None:
        await repository.revoke_family(session, stored[0].family_id)


async def authenticate(session: AsyncSession, access_token: str, settings: AuthSettings) -> User:
    claims = decode_token(access_token, "access", settings)
    user = await users_repository.get_active(session, claims.user_id) if claims else None
    if user is None or claims is None or user.session_generation != claims.generation:
        raise Unauthorized("Invalid or expired token")
    return user


def require_free_to_act(user: User) -> None:
    """A user whose password an administrator set may only choose a new one: every other
    request, with a login or a key, on any API, is refused until then."""
    if user.must_change_password:
        raise Forbidden(SET_BY_ADMIN)
