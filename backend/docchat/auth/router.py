from __future__ import annotations

from fastapi import Request, status

from docchat.auth import service
from docchat.auth.dependencies import ClientAddress
from docchat.auth.schemas import RefreshRequest, RegisterRequest, RegistrationReceived, TokenPair
from docchat.kit.routing import SessionDep, SettingsDep, make_router

router = make_router(prefix="/auth", tags=["auth"])


@router.post(
    "/register",
    status_code=status.HTTP_201_CREATED,
    response_model=RegistrationReceived,
    operation_id="auth_register",
)
async def register(
    data: RegisterRequest,
    request: Request,
    address: ClientAddress,
    session: SessionDep,
    settings: SettingsDep,
) -> RegistrationReceived:
    """Create an account, then log in. The answer is the same when the email is taken (so
    sign-up does not reveal who has an account); too-easy passwords are refused (422)."""
    limiter = request.app.state.signup_limiter
    return await service.register(session, data, settings.auth, limiter, address)


@router.post("/refresh", response_model=TokenPair, operation_id="auth_refresh")
async def refresh(data: RefreshRequest, session: SessionDep, settings: SettingsDep) -> TokenPair:
    """A new token pair for a refresh token, which is then spent: using it twice ends the login."""
    return await service.refresh(session, data.refresh_token, settings.auth)


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT, operation_id="auth_logout")
async def logout(data: RefreshRequest, session: SessionDep, settings: SettingsDep) -> None:
    """End this login: its refresh tokens stop working (access tokens expire on their own)."""
    await service.logout(session, data.refresh_token, settings.auth)
