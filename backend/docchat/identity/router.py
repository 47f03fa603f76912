from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import OAuth2PasswordRequestForm

from docchat.auth.dependencies import ClientAddress
from docchat.auth.schemas import TokenPair
from docchat.identity import service
from docchat.identity.schemas import LoginMethods
from docchat.kit.routing import SessionDep, SettingsDep, make_router

router = make_router(prefix="/auth", tags=["auth"])


@router.post("/login", response_model=TokenPair, operation_id="auth_login")
async def login(
    form: Annotated[OAuth2PasswordRequestForm, Depends()],
    request: Request,
    address: ClientAddress,
    session: SessionDep,
    settings: SettingsDep,
) -> TokenPair:
    """OAuth2 password flow: form fields `username` (the email, or with a company directory
    also the directory user name) and `password`.

    Repeated failures are answered with 429 and `Retry-After`; 503 when the directory cannot
    be reached to check a password."""
    return await service.login(
        session,
        form.username,
        form.password,
        settings,
        request.app.state.directory,
        request.app.state.login_limiter,
        address,
    )


@router.get("/methods", response_model=LoginMethods, operation_id="auth_methods")
async def methods(settings: SettingsDep) -> LoginMethods:
    """How to log in here (no login needed): whether a company directory checks passwords and
    whether anyone may sign up."""
    return LoginMethods(
        directory=settings.ldap.enabled, registration=settings.auth.registration_enabled
    )
