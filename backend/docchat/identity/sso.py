"""A single sign-on, from the button to the tokens: what the browser carries between the two
legs (a signed cookie: state, nonce, PKCE verifier, where to return), and what is done with
the person the provider vouched for."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.auth import service as auth
from docchat.auth.schemas import TokenPair
from docchat.auth.security import read_payload, sign_payload
from docchat.config import AuthSettings, OidcSettings
from docchat.identity import codes
from docchat.identity.accounts import Rules, account_for
from docchat.identity.oidc import OidcProvider, ProviderUnavailable, SignInRefused
from docchat.kit.errors import Forbidden
from docchat.users import repository as users
from docchat.users.models import User

OIDC = "oidc"
PENDING = "sso-pending"
PENDING_LIFETIME = timedelta(minutes=10)
TICKET_LIFETIME = timedelta(seconds=60)
# How many requests to the provider a sign-in may make (metadata, token, keys, userinfo): a
# second return waits for the first at most this many of the provider's timeouts.
PROVIDER_CALLS = 4
EXPIRED = "This sign-in expired, was already used, or was started in another browser: start again"


@dataclass(frozen=True)
class Started:
    url: str  # the provider's login page
    pending: str  # the signed value the browser keeps until it returns


async def start(
    provider: OidcProvider, settings: AuthSettings, redirect_uri: str, return_to: str
) -> Started:
    authorization = await provider.authorization(redirect_uri)
    pending = sign_payload(
        {
            "state": authorization.state,
            "nonce": authorization.nonce,
            "verifier": authorization.verifier,
            "next": safe_return_path(return_to),
        },
        PENDING,
        settings,
        PENDING_LIFETIME,
    )
    return Started(authorization.url, pending)


@dataclass(frozen=True)
class Finished:
    tokens: TokenPair
    return_to: str


async def finish(
    session: AsyncSession,
    provider: OidcProvider,
    settings: AuthSettings,
    oidc: OidcSettings,
    pending: str | None,
    code: str,
    state: str,
    redirect_uri: str,
    address: str,
) -> Finished:
    """The tokens of the person who signed in. Raises SignInRefused (and Forbidden from the
    account rules) for anything that must not sign anyone in.

    The same return twice (a browser that requested the address again, as a service worker's
    navigation preload makes it do): the code goes to the provider once, and the second return
    gets the first one's outcome, a ticket of its own when that was a sign-in."""
    kept = read_payload(pending, PENDING, settings) if pending else None
    # The state must come back to the browser that started the sign-in (its cookie): a link
    # with someone else's code and state signs no one in here.
    expected = str(kept.get("state", "")).encode() if kept else b""
    if kept is None or not hmac.compare_digest(expected, state.encode()):
        raise SignInRefused(EXPIRED)
    return_to = safe_return_path(str(kept.get("next", "/")))
    if not await codes.claim(session, code, state):
        wait = oidc.timeout_seconds * PROVIDER_CALLS
        return Finished(await _as_before(session, settings, code, state, wait), return_to)
    try:
        person = await provider.finish(
            code, redirect_uri, str(kept["verifier"]), str(kept["nonce"])
        )
        rules = Rules(OIDC, oidc.create_accounts, settings.break_glass_email)
        user = await account_for(session, person, rules, address)
    except (SignInRefused, Forbidden) as exc:
        await _settle_failed(session, code, codes.REFUSED, str(exc))
        raise
    except ProviderUnavailable:
        await _settle_failed(session, code, codes.UNAVAILABLE)
        raise
    await auth.record_login(session, user, address, via=OIDC)
    await codes.settle(session, code, codes.SIGNED_IN, user_id=user.id)
    return Finished(await _ticket(session, user, settings), return_to)


async def _ticket(session: AsyncSession, user: User, settings: AuthSettings) -> TokenPair:
    # The ticket the browser carries back: a refresh token that lives a minute, traded at once.
    return await auth.issue_tokens(session, user, settings, refresh_lifetime=TICKET_LIFETIME)


async def _settle_failed(session: AsyncSession, code: str, kind: str, reason: str = "") -> None:
    # Nothing of the failed sign-in is kept, but its outcome is (for a second return).
    await session.rollback()
    await codes.settle(session, code, kind, reason=reason)
    await session.commit()


async def _as_before(
    session: AsyncSession, settings: AuthSettings, code: str, state: str, wait: float
) -> TokenPair:
    """A second return of a code: the first one's outcome, never a second trade."""
    outcome = await codes.outcome_of(session, code, state, wait)
    if outcome is None:
        raise SignInRefused(EXPIRED)
    if outcome.kind == codes.UNAVAILABLE:
        raise ProviderUnavailable("the first return of this code found the provider unavailable")
    user = await users.get_active(session, outcome.user_id) if outcome.user_id else None
    if outcome.kind != codes.SIGNED_IN or user is None:
        raise SignInRefused(outcome.reason or EXPIRED)
    return await _ticket(session, user, settings)


async def record_refusal(session: AsyncSession, address: str, reason: str) -> None:
    await audit.record(
        session,
        audit.AuditAction.login_failed,
        actor=None,
        actor_email=OIDC,
        address=address,
        reason=reason,
    )


def safe_return_path(path: str) -> str:
    """A page of this site to return to: a path, never another origin (`//host`, `/\\host`)."""
    if not path.startswith("/") or path.startswith(("//", "/\\")) or any(c in path for c in "\r\n"):
        return "/"
    return path
