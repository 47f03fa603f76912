"""Single sign-on through an OpenID Connect provider: a real one (npm oidc-provider) started by
the tests, its login page driven over HTTP, docchat in front of it as OIDC_* say."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
import pytest_asyncio
from jose import jwt
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.config import OidcSettings, Settings
from docchat.identity import codes
from docchat.identity.models import ExternalIdentity
from docchat.identity.oidc import OidcProvider, SignInRefused
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.users import repository as users
from tests.support import oidc_provider
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcServer, rsa_jwk
from tests.support.users import PASSWORD, admin_headers, login, register, unique_email

BASE = "http://docchat.test"
CALLBACK = f"{BASE}/api/v1/auth/oidc/callback"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcServer]:
    if not oidc_provider.available():
        pytest.fail(f"The single sign-on tests need node and: {oidc_provider.INSTALL}")
    folder = tmp_path_factory.mktemp("oidc")
    with oidc_provider.running_provider(folder, [CALLBACK]) as server:
        yield server


def oidc_settings(provider: OidcServer, **changes: Any) -> OidcSettings:
    values: dict[str, Any] = {
        "issuer": provider.issuer,
        "name": "Test IdP",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "scopes": "openid email profile groups",
    }
    return OidcSettings(_env_file=None, **(values | changes))  # type: ignore[call-arg]


@pytest_asyncio.fixture
async def connect(
    settings: Settings, components: Components, live_components: Components
) -> AsyncIterator[Any]:
    """An HTTP client to an app configured with these settings' changes (`live`: its requests
    commit for real, each on a connection of its own, for requests at the same time)."""
    clients: list[httpx.AsyncClient] = []

    async def open_client(live: bool = False, **changes: Any) -> httpx.AsyncClient:
        configured = settings.model_copy(update=changes)
        app = create_app(configured, run_worker=False)
        attach_components(app, live_components if live else components)
        app.state.settings = configured
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        client = httpx.AsyncClient(transport=transport, base_url=BASE)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.aclose()


async def through_provider(
    client: httpx.AsyncClient, login_name: str, next_page: str = "/"
) -> httpx.Response:
    """Click 'Sign in', log in on the provider's page as `login_name`, and come back: the
    response of docchat's callback."""
    return await client.get(await return_address(client, login_name, next_page))


async def return_address(client: httpx.AsyncClient, login_name: str, next_page: str = "/") -> str:
    """Click 'Sign in' and log in on the provider's page as `login_name`: the address of
    docchat's callback the provider sends the browser back to (not yet requested)."""
    start = await client.get("/api/v1/auth/oidc/login", params={"next": next_page})
    assert start.status_code == 302, start.text
    location = start.headers["location"]
    async with httpx.AsyncClient() as browser:  # the provider's side: its own cookies
        for _ in range(10):
            if location.startswith(CALLBACK):
                return location.removeprefix(BASE)
            page = await browser.get(location)
            if page.status_code in (302, 303):
                location = str(page.url.join(page.headers["location"]))
                continue
            action = re.search(r'<form[^>]*action="([^"]+)"', page.text)
            assert action, page.text[:2000]
            submitted = await browser.post(
                page.url.join(action.group(1)),
                data={"prompt": "login", "login": login_name, "password": "any"},
            )
            assert submitted.status_code in (302, 303), submitted.text[:2000]
            location = str(submitted.url.join(submitted.headers["location"]))
    raise AssertionError("the provider never sent the browser back")


def ticket_of(callback: httpx.Response) -> str:
    assert callback.status_code == 303, callback.text
    fragment = urlsplit(callback.headers["location"]).fragment
    assert fragment.startswith("login_ticket="), callback.headers["location"]
    return fragment.removeprefix("login_ticket=")


def error_of(callback: httpx.Response) -> str:
    assert callback.status_code == 303, callback.text
    location = callback.headers["location"]
    assert location.startswith("/#login_error="), location
    return unquote(location.removeprefix("/#login_error="))


async def tokens_for(client: httpx.AsyncClient, ticket: str) -> dict[str, str]:
    traded = await client.post("/api/v1/auth/refresh", json={"refresh_token": ticket})
    assert traded.status_code == 200, traded.text
    return {"Authorization": f"Bearer {traded.json()['access_token']}"}


async def test_sign_in_makes_the_account_with_its_groups_and_the_ticket_works_once(
    provider: OidcServer, connect: Any, session: AsyncSession
) -> None:
    email = unique_email("ada")
    subject = f"ada-{email[4:12]}"
    provider.set_account(
        subject, email=email, email_verified=True, name="Ada Lovelace", groups=["analysts"]
    )
    client = await connect(oidc=oidc_settings(provider))
    methods = (await client.get("/api/v1/auth/methods")).json()
    assert methods["single_sign_on"] == {"name": "Test IdP", "url": "/api/v1/auth/oidc/login"}

    callback = await through_provider(client, subject, next_page="/collections")
    assert callback.headers["location"].startswith("/collections#login_ticket=")
    assert callback.headers["cache-control"] == "no-store"
    ticket = ticket_of(callback)
    # The ticket lives a minute: a browser that never trades it leaves nothing usable behind.
    lifetime = jwt.get_unverified_claims(ticket)
    assert lifetime["exp"] - lifetime["iat"] == 60
    headers = await tokens_for(client, ticket)
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    assert (me["email"], me["display_name"]) == (email, "Ada Lovelace")
    groups = (await client.get("/api/v1/groups", params={"limit": 100}, headers=headers)).json()
    assert {"analysts": "oidc"}.items() <= {g["name"]: g["source"] for g in groups["items"]}.items()
    # Its members and name are the provider's: the refusal says so, not "company directory"
    # (issue 67, item 10).
    analysts = next(g["id"] for g in groups["items"] if g["name"] == "analysts")
    admin = await admin_headers(client, session)
    kept = await client.delete(f"/api/v1/admin/groups/{analysts}/members/{me['id']}", headers=admin)
    renamed = await client.patch(
        f"/api/v1/admin/groups/{analysts}", json={"name": "quants"}, headers=admin
    )
    for refused in (kept, renamed):
        assert refused.status_code == 409
        assert "single sign-on" in refused.json()["detail"], refused.json()
        assert "directory" not in refused.json()["detail"]
    # The ticket was spent: used again (a leaked address), it ends that login.
    again = await client.post("/api/v1/auth/refresh", json={"refresh_token": ticket})
    assert again.status_code == 401

    # The groups follow the provider at the next sign-in.
    provider.set_account(subject, email=email, email_verified=True, name="Ada", groups=[])
    await tokens_for(client, ticket_of(await through_provider(client, subject)))
    user = await users.get_by_email(session, email)
    assert user is not None
    listed = (await client.get("/api/v1/groups", params={"limit": 100}, headers=headers)).json()
    analysts = next(g for g in listed["items"] if g["name"] == "analysts")
    assert analysts["member_count"] == 0


async def test_an_unverified_email_never_takes_over_an_account(
    provider: OidcServer, connect: Any, session: AsyncSession
) -> None:
    client = await connect(oidc=oidc_settings(provider))
    # The address's account, made before its owner ever signed in: by them, or by anyone
    # (sign-up checks no address), who keeps its password and an API key.
    victim = await register(client, unique_email("victim"))
    early = {"Authorization": f"Bearer {(await login(client, victim)).json()['access_token']}"}
    made = await client.post(
        "/api/v1/api-keys", json={"name": "left behind", "scopes": ["read"]}, headers=early
    )
    key = {"Authorization": f"Bearer {made.json()['secret']}"}
    provider.set_account("mallory", email=victim, email_verified=False, name="Mallory")
    message = error_of(await through_provider(client, "mallory"))
    assert "not verified your e-mail" in message
    user = await users.get_by_email(session, victim)
    assert user is not None
    linked = await session.execute(
        select(ExternalIdentity).where(ExternalIdentity.user_id == user.id)
    )
    assert linked.first() is None
    refused = await session.execute(
        select(AuditEntry).where(
            AuditEntry.action == "auth.login_failed", AuditEntry.actor_email == "oidc"
        )
    )
    assert any("verified" in str(entry.detail) for entry in refused.scalars())
    # Verified, the same address is the same person: the account is linked, not duplicated.
    assert (await client.get("/api/v1/users/me", headers=key)).status_code == 200
    provider.set_account("victim-at-idp", email=victim, email_verified=True, name="Victim")
    headers = await tokens_for(client, ticket_of(await through_provider(client, "victim-at-idp")))
    assert (await client.get("/api/v1/users/me", headers=headers)).json()["id"] == str(user.id)
    # From now on only the provider signs in as it: the earlier password, session and key end.
    assert (await login(client, victim)).status_code == 401
    assert (await client.get("/api/v1/users/me", headers=early)).status_code == 401
    assert (await client.get("/api/v1/users/me", headers=key)).status_code == 401


async def test_a_replayed_or_foreign_state_signs_no_one_in(
    provider: OidcServer, connect: Any
) -> None:
    email = unique_email("bea")
    provider.set_account("bea", email=email, email_verified=True, name="Bea")
    client = await connect(oidc=oidc_settings(provider))
    callback = await through_provider(client, "bea")
    ticket_of(callback)
    # The same return address again once the state cookie is gone (a minute later).
    client.cookies.clear()
    state_and_code = callback.request.url.query.decode()
    replayed = await client.get(f"/api/v1/auth/oidc/callback?{state_and_code}")
    assert "expired, was already used" in error_of(replayed)
    # A return with another sign-in's state (a link someone sent): refused.
    await client.get("/api/v1/auth/oidc/login")
    forged = await client.get("/api/v1/auth/oidc/callback", params={"code": "x", "state": "y"})
    assert "expired, was already used" in error_of(forged)
    # Whatever comes back in the address is not a 500, and its text is not repeated.
    odd = await client.get("/api/v1/auth/oidc/callback", params={"code": "x", "state": "é"})
    assert "expired, was already used" in error_of(odd)
    denied = await client.get(
        "/api/v1/auth/oidc/callback", params={"error": "access_denied", "state": "y"}
    )
    assert error_of(denied) == "Sign-in failed: the provider ended the sign-in (access_denied)"
    spoofed = await client.get(
        "/api/v1/auth/oidc/callback",
        params={"error": "Call 555-0100 to restore your account", "error_description": "x"},
    )
    assert error_of(spoofed) == "Sign-in failed: the provider ended the sign-in (error)"


async def test_a_second_return_waits_for_the_first_without_holding_a_connection(
    live_components: Components,
) -> None:
    """While the first return of a code is at the provider, the second one waits for its
    outcome. It held its transaction (and so a pooled connection) open all the while: a burst
    of such returns could take the whole pool (review of issue 67's fix)."""
    code, state = f"code-{uuid.uuid4()}", "state"
    async with live_components.sessionmaker() as first:
        assert await codes.claim(first, code, state)
    async with live_components.sessionmaker() as waiting, live_components.sessionmaker() as watch:
        looking = asyncio.create_task(codes.outcome_of(waiting, code, state, wait_seconds=1.0))
        await asyncio.sleep(0.5)
        held = await watch.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction' AND query LIKE '%sso_redeemed_codes%'"
            )
        )
        assert await looking is None  # no outcome came within the wait
    assert held == 0


async def test_the_same_return_twice_signs_in_that_browser_and_no_other(
    provider: OidcServer, connect: Any, session: AsyncSession
) -> None:
    """A browser that requests the callback twice at once (a service worker's navigation
    preload did, issue 67): the code goes to the provider once, and both requests sign in."""
    email = unique_email("kim")
    provider.set_account("kim", email=email, email_verified=True, name="Kim")
    client = await connect(live=True, oidc=oidc_settings(provider))
    address = await return_address(client, "kim", next_page="/collections")
    both = await asyncio.gather(client.get(address), client.get(address))
    for callback in both:
        assert callback.headers["location"].startswith("/collections#login_ticket=")
        headers = await tokens_for(client, ticket_of(callback))
        assert (await client.get("/api/v1/users/me", headers=headers)).json()["email"] == email
    user = await users.get_by_email(session, email)
    assert user is not None
    logins = await session.execute(
        select(AuditEntry).where(AuditEntry.action == "auth.login", AuditEntry.actor_id == user.id)
    )
    assert len(logins.all()) == 1  # one sign-in, answered twice
    # Again a moment later, in the same browser: the same outcome.
    assert (await client.get(address)).headers["location"].startswith("/collections#login_ticket=")

    # Another browser with the same address, or with a sign-in of its own and this code: no.
    other = await connect(live=True, oidc=oidc_settings(provider))
    assert "expired, was already used" in error_of(await other.get(address))
    started = await other.get("/api/v1/auth/oidc/login")
    own_state = parse_qs(urlsplit(started.headers["location"]).query)["state"][0]
    code = parse_qs(urlsplit(address).query)["code"][0]
    taken = await other.get("/api/v1/auth/oidc/callback", params={"code": code, "state": own_state})
    assert "expired, was already used" in error_of(taken)

    # A refusal is answered twice too, with its reason.
    provider.set_account("kim-unverified", email=email, email_verified=False, name="Kim")
    address = await return_address(client, "kim-unverified")
    for callback in await asyncio.gather(client.get(address), client.get(address)):
        assert "not verified your e-mail" in error_of(callback)


async def test_the_id_token_must_be_the_providers_for_this_client_and_this_sign_in(
    provider: OidcServer,
) -> None:
    checker = OidcProvider(oidc_settings(provider))
    good = provider.id_claims("n-1")
    assert (await checker.verify_id_token(provider.sign(good), "n-1"))["sub"] == "someone"
    forger = rsa_jwk(provider.key["kid"])  # same key id, another key
    cases = {
        "forged": provider.sign(good, key=forger),
        "wrong audience": provider.sign(provider.id_claims("n-1", aud="another-client")),
        "expired": provider.sign(provider.id_claims("n-1", exp=1_000_000, iat=999_000)),
        "another sign-in": provider.sign(provider.id_claims("n-2")),
        "another issuer": provider.sign(provider.id_claims("n-1", iss="https://evil.example")),
        "unsigned": _unsigned(good),
        "keyed with the client secret": str(jwt.encode(good, CLIENT_SECRET, algorithm="HS256")),
        "another client's": provider.sign(
            provider.id_claims("n-1", aud=[CLIENT_ID, "other"], azp="other")
        ),
    }
    reasons = {}
    for case, token in cases.items():
        with pytest.raises(SignInRefused) as refused:
            await checker.verify_id_token(token, "n-1")
        reasons[case] = str(refused.value)
    assert reasons == {
        "forged": "the ID token's signature does not check out",
        "wrong audience": "the ID token is not for this server (Invalid audience)",
        "expired": "the ID token has expired",
        "another sign-in": "the ID token belongs to another sign-in (nonce)",
        "another issuer": "the ID token is not for this server (Invalid issuer)",
        "unsigned": "the ID token is signed with 'none', which is not allowed",
        "keyed with the client secret": "the ID token is signed with 'HS256', which is not allowed",
        "another client's": "the ID token was issued to another client",
    }


def _unsigned(claims: dict[str, Any]) -> str:
    import base64
    import json

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


async def test_password_login_off_but_for_the_break_glass_account(
    provider: OidcServer, connect: Any, settings: Settings
) -> None:
    open_client = await connect()
    keeper, other = unique_email("breakglass"), unique_email("someone")
    await register(open_client, keeper)
    await register(open_client, other)
    auth = settings.auth.model_copy(
        update={"password_login": False, "break_glass_email": keeper.upper()}
    )
    client = await connect(auth=auth, oidc=oidc_settings(provider))
    methods = (await client.get("/api/v1/auth/methods")).json()
    assert (methods["password"], methods["registration"]) == (False, False)
    assert (await login(client, keeper)).status_code == 200
    refused = await login(client, other)
    assert refused.status_code == 403
    assert "single sign-on" in refused.json()["detail"]
    signup = await client.post(
        "/api/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}
    )
    assert signup.status_code == 403


async def test_the_break_glass_address_is_never_taken_over(
    provider: OidcServer, connect: Any, settings: Settings
) -> None:
    keeper = unique_email("keeper")
    await register(await connect(), keeper)
    auth = settings.auth.model_copy(update={"break_glass_email": keeper})
    client = await connect(auth=auth, oidc=oidc_settings(provider))
    provider.set_account("eve", email=keeper, email_verified=True, name="Eve")
    assert "break-glass" in error_of(await through_provider(client, "eve"))
    assert (await login(client, keeper)).status_code == 200


async def test_a_wrong_client_secret_is_a_setup_problem_not_a_refused_person(
    provider: OidcServer, connect: Any
) -> None:
    provider.set_account("dan", email=unique_email("dan"), email_verified=True, name="Dan")
    client = await connect(oidc=oidc_settings(provider, client_secret="not-the-secret"))
    assert "not available right now" in error_of(await through_provider(client, "dan"))


async def test_start_keeps_to_this_site_and_says_when_the_provider_is_down(
    provider: OidcServer, connect: Any
) -> None:
    client = await connect(oidc=oidc_settings(provider))
    provider.set_account("cy", email=unique_email("cy"), email_verified=True, name="Cy")
    for elsewhere in ("//evil.example/x", "https://evil.example", "/\\evil.example"):
        callback = await through_provider(client, "cy", next_page=elsewhere)
        assert callback.headers["location"].startswith("/#login_ticket=")
    down = await connect(oidc=oidc_settings(provider, issuer="http://127.0.0.1:9"))
    started = await down.get("/api/v1/auth/oidc/login")
    assert started.status_code == 303
    assert "not available right now" in unquote(started.headers["location"])
    plain = await connect()
    assert (await plain.get("/api/v1/auth/oidc/login")).status_code == 404
    assert (await plain.get("/api/v1/auth/methods")).json()["single_sign_on"] is None


def test_settings_refuse_an_insecure_issuer() -> None:
    with pytest.raises(ValueError, match="https"):
        OidcSettings(_env_file=None, issuer="http://idp.example", client_id="x")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="OIDC_CLIENT_ID"):
        OidcSettings(_env_file=None, issuer="https://idp.example")  # type: ignore[call-arg]
