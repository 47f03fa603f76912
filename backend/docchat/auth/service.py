from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.schemas import RegisterRequest, TokenPair
from docchat.auth.security import create_token, decode_token, verify_password
from docchat.config import AuthSettings
from docchat.kit.errors import Forbidden, Unauthorized
from docchat.users import repository as users_repository
from docchat.users import service as users_service
from docchat.users.models import User

INVALID_CREDENTIALS = "Incorrect email or password"


async def register(session: AsyncSession, data: RegisterRequest, settings: AuthSettings) -> User:
    if not settings.registration_enabled:
        raise Forbidden("Registration is disabled on this server; ask an administrator")
    return await users_service.create(
        session, email=str(data.email), password=data.password, display_name=data.display_name
    )


def issue_tokens(user: User, settings: AuthSettings) -> TokenPair:
    return TokenPair(
        access_token=create_token(user.id, "access", settings),
        refresh_token=create_token(user.id, "refresh", settings),
        expires_in=settings.access_token_minutes * 60,
    )


async def login(
    session: AsyncSession, email: str, password: str, settings: AuthSettings
) -> TokenPair:
    user = await users_repository.get_by_email(session, email)
    # Same message (and same hashing work) whether the email exists or not.
    password_ok = verify_password(password, user.password_hash if user else None)
    if user is None or not password_ok or not user.is_active:
        raise Unauthorized(INVALID_CREDENTIALS)
    return issue_tokens(user, settings)


async def refresh(session: AsyncSession, refresh_token: str, settings: AuthSettings) -> TokenPair:
    claims = decode_token(refresh_token, "refresh", settings)
    user = await users_repository.get_active(session, claims.user_id) if claims else None
    if user is None:
        raise Unauthorized("Invalid or expired refresh token")
    return issue_tokens(user, settings)


async def authenticate(session: AsyncSession, access_token: str, settings: AuthSettings) -> User:
    claims = decode_token(access_token, "access", settings)
    user = await users_repository.get_active(session, claims.user_id) if claims else None
    if user is None:
        raise Unauthorized("Invalid or expired token")
    return user
