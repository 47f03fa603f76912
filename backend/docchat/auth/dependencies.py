from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import OAuth2PasswordBearer

from docchat.auth import service
from docchat.dependencies import SettingsDep
from docchat.kit.errors import Forbidden, Unauthorized
from docchat.kit.routing import SessionDep
from docchat.users.models import User

oauth2_scheme = OAuth2PasswordBearer(tokenUrl="/api/v1/auth/login", auto_error=False)


def get_client_address(request: Request) -> str:
    """The peer's address (a trusted proxy's X-Forwarded-For is applied by the server)."""
    return request.client.host if request.client else "unknown"


ClientAddress = Annotated[str, Depends(get_client_address)]


async def get_current_user(
    session: SessionDep,
    settings: SettingsDep,
    token: Annotated[str | None, Depends(oauth2_scheme)],
) -> User:
    if not token:
        raise Unauthorized()
    return await service.authenticate(session, token, settings.auth)


CurrentUser = Annotated[User, Depends(get_current_user)]


async def get_admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise Forbidden("Administrator rights are required")
    return user


AdminUser = Annotated[User, Depends(get_admin_user)]
