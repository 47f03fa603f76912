from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Query, Request
from fastapi.responses import RedirectResponse
from fastapi.security import OAuth2PasswordRequestForm

from docchat.auth.dependencies import ClientAddress
from docchat.auth.schemas import TokenPair
from docchat.config import Settings
from docchat.identity import codes, service, sso
from docchat.identity.oidc import OidcProvider, ProviderUnavailable, SignInRefused
from docchat.identity.schemas import LoginMethods, SingleSignOn
from docchat.kit.errors import Forbidden, NotFound
from docchat.kit.routing import SessionDep, SettingsDep, make_router

router = make_router(prefix="/auth", tags=["auth"])

PENDING_COOKIE = "docchat_sso"
COOKIE_PATH = "/api/v1/auth/oidc"
START_PATH = "/api/v1/auth/oidc/login"
PENDING_SECONDS = int(sso.PENDING_LIFETIME.total_seconds())
REPLAY_SECONDS = int(codes.REPLAY_WINDOW.total_seconds())
UNREACHABLE = (
    "Single sign-on is not available right now (the provider could not be reached, or refused "
    "this server): try again in a moment, or tell an administrator"
)


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
    be reached to check a password; 403 when password logins are turned off for the account."""
    return await service.login(
        session,
        form.username,
        form.password,
        settings.auth,
        settings.ldap,
        request.app.state.directory,
        request.app.state.login_limiter,
        address,
    )


@router.get("/methods", response_model=LoginMethods, operation_id="auth_methods")
async def methods(settings: SettingsDep) -> LoginMethods:
    """How to log in here (no login needed): passwords, a company directory, single sign-on,
    and whether anyone may sign up."""
    oidc = settings.oidc
    return LoginMethods(
        password=settings.auth.password_login,
        directory=settings.ldap.enabled,
        registration=settings.auth.registration_enabled and settings.auth.password_login,
        single_sign_on=SingleSignOn(name=oidc.name, url=START_PATH) if oidc.enabled else None,
    )


def _provider(request: Request) -> OidcProvider:
    provider: OidcProvider | None = request.app.state.oidc
    if provider is None:
        raise NotFound("Single sign-on is not set up on this server (OIDC_ISSUER)")
    return provider


def _redirect_uri(request: Request, settings: Settings) -> str:
    return settings.oidc.redirect_uri or str(request.url_for("oidc_callback"))


def _back_with_error(message: str) -> RedirectResponse:
    """To the web app's login page, which shows the message (a redirect: this is a page the
    browser navigated to, not an API call)."""
    return RedirectResponse(f"/#login_error={quote(message)}", status_code=303)


@router.get(
    "/oidc/login",
    status_code=302,
    response_class=RedirectResponse,
    operation_id="auth_oidc_login",
    responses={302: {"description": "To the provider's login page"}},
)
async def oidc_login(
    request: Request,
    settings: SettingsDep,
    next: Annotated[str, Query(description="The page of this site to return to")] = "/",
) -> RedirectResponse:
    """Start a single sign-on: the browser goes to the provider with a fresh state, nonce and
    PKCE challenge, and keeps what its return must match in an HttpOnly cookie."""
    provider = _provider(request)
    try:
        started = await sso.start(provider, settings.auth, _redirect_uri(request, settings), next)
    except ProviderUnavailable:
        return _back_with_error(UNREACHABLE)
    response = RedirectResponse(started.url, status_code=302)
    _set_pending(response, request, settings, started.pending, PENDING_SECONDS)
    return response


def _set_pending(
    response: RedirectResponse, request: Request, settings: Settings, value: str, seconds: int
) -> None:
    response.set_cookie(
        PENDING_COOKIE,
        value,
        max_age=seconds,
        path=COOKIE_PATH,
        httponly=True,
        samesite="lax",  # sent on the provider's top-level redirect back, not on embeds
        # Secure when the site is https, even behind a proxy that speaks http to us.
        secure=_redirect_uri(request, settings).startswith("https://"),
    )


@router.get(
    "/oidc/callback",
    name="oidc_callback",
    status_code=303,
    response_class=RedirectResponse,
    operation_id="auth_oidc_callback",
    responses={303: {"description": "To the web app: signed in, or the reason it failed"}},
)
async def oidc_callback(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddress,
    code: str = "",
    state: str = "",
    error: str = "",
    error_description: str = "",
) -> RedirectResponse:
    """Where the provider sends the browser back. Signed in: to the page the sign-in started
    from, with a one-time ticket in the address's fragment (the web app trades it at once for
    its tokens with POST /auth/refresh; a second use ends that login)."""
    provider = _provider(request)
    try:
        if error:
            # Its code only, when it is one (the text of the address is anyone's to write).
            known = error if re.fullmatch(r"[a-z_]{1,64}", error) else "error"
            raise SignInRefused(f"the provider ended the sign-in ({known})")
        finished = await sso.finish(
            session,
            provider,
            settings.auth,
            settings.oidc,
            request.cookies.get(PENDING_COOKIE),
            code,
            state,
            _redirect_uri(request, settings),
            address,
        )
    except (SignInRefused, Forbidden) as exc:
        await session.rollback()
        await sso.record_refusal(session, address, str(exc))
        response = _back_with_error(f"Sign-in failed: {exc}")
    except ProviderUnavailable:
        await session.rollback()
        response = _back_with_error(UNREACHABLE)
    else:
        ticket = f"#login_ticket={finished.tokens.refresh_token}"
        response = RedirectResponse(f"{finished.return_to}{ticket}", status_code=303)
        # Kept a minute more, for a second request of this same address by this browser (it
        # is answered as this one was); gone after that.
        _set_pending(response, request, settings, request.cookies[PENDING_COOKIE], REPLAY_SECONDS)
        response.headers["Cache-Control"] = "no-store"
        return response
    response.delete_cookie(PENDING_COOKIE, path=COOKIE_PATH)
    response.headers["Cache-Control"] = "no-store"
    return response
