from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import OAuth2PasswordBearer
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.auth import api_keys, service
from docchat.auth.ratelimit import LoginLimiter
from docchat.auth.scopes import Scope, required_scope
from docchat.config import AuthSettings
from docchat.kit.errors import Forbidden, Unauthorized
from docchat.kit.routing import SessionDep, SettingsDep
from docchat.users.models import User

oauth2_scheme = OAuth2PasswordBearer(tokenUrl="/api/v1/auth/login", auto_error=False)


def get_client_address(request: Request) -> str:
    """The peer's address (a trusted proxy's X-Forwarded-For is applied by the server)."""
    return request.client.host if request.client else "unknown"


ClientAddress = Annotated[str, Depends(get_client_address)]


def get_login_limiter(request: Request) -> LoginLimiter:
    """The process's count of wrong passwords (logins, and passwords asked again)."""
    limiter: LoginLimiter = request.app.state.login_limiter
    return limiter


LoginLimiterDep = Annotated[LoginLimiter, Depends(get_login_limiter)]


def _route_scope(request: Request) -> Scope | None:
    route = request.scope.get("route")
    tags = [str(tag) for tag in route.tags] if isinstance(route, APIRoute) else []
    return required_scope(request.method, tags)


async def get_signed_in_user(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    token: Annotated[str | None, Depends(oauth2_scheme)],
) -> User:
    """The caller, by access token or API key; may still owe a password change."""
    if not token:
        raise Unauthorized()
    if api_keys.looks_like_key(token):
        return await api_keys.authenticate(session, token, _route_scope(request))
    return await service.authenticate(session, token, settings.auth)


SignedInUser = Annotated[User, Depends(get_signed_in_user)]


async def administrator_calling(
    request: Request, sessionmaker: async_sessionmaker[AsyncSession], settings: AuthSettings
) -> User | None:
    """The administrator whose access token or admin-scoped key the request carries, else None
    (never raises: for routes that anyone may call and administrators see more of)."""
    token = await oauth2_scheme(request)
    if not token:
        return None
    try:
        async with sessionmaker() as session:
            if api_keys.looks_like_key(token):
                user = await api_keys.authenticate(session, token, Scope.admin)
            else:
                user = await service.authenticate(session, token, settings)
            service.require_free_to_act(user)
    except Exception:  # a bad token, or a database that cannot say: no details, no error
        return None
    return user if user.is_admin else None


async def get_current_user(user: SignedInUser) -> User:
    service.require_free_to_act(user)
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


async def get_admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise Forbidden("Administrator rights are required")
    return user


AdminUser = Annotated[User, Depends(get_admin_user)]
