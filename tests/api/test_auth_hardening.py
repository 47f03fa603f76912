from __future__ import annotations

import stat
import threading
from pathlib import Path
from unittest.mock import patch

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.audit.service import AuditAction
from docchat.auth.security import create_token
from docchat.auth.service import REUSED_REFRESH
from docchat.auth.signing_key import with_signing_key
from docchat.config import AuthSettings, Environment, Settings
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.users import passwords
from docchat.users import service as users_service
from docchat.users.models import Role, User
from tests.support.documents import upload
from tests.support.users import (
    PASSWORD,
    admin_headers,
    auth_headers,
    login,
    register,
    unique_email,
)

ADMIN_UPLOAD = "/api/v1/admin/documents"


async def test_refresh_tokens_are_single_use_and_reuse_ends_the_login(
    client: httpx.AsyncClient,
) -> None:
    email = await register(client)
    first = (await login(client, email)).json()
    second = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": first["refresh_token"]}
    )
    assert second.status_code == 200
    # Replaying the spent token (a thief, or a stolen copy) is refused...
    replay = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": first["refresh_token"]}
    )
    assert replay.status_code == 401 and replay.json()["detail"] == REUSED_REFRESH
    # ...and the legitimate newer token of that login stops working too.
    newer = second.json()["refresh_token"]
    assert (
        await client.post("/api/v1/auth/refresh", json={"refresh_token": newer})
    ).status_code == 401
    # Another login of the same user is not affected.
    other = (await login(client, email)).json()
    assert (
        await client.post("/api/v1/auth/refresh", json={"refresh_token": other["refresh_token"]})
    ).status_code == 200


async def test_logout_ends_the_refresh_chain(client: httpx.AsyncClient) -> None:
    email = await register(client)
    tokens = (await login(client, email)).json()
    assert (
        await client.post("/api/v1/auth/logout", json={"refresh_token": tokens["refresh_token"]})
    ).status_code == 204
    refreshed = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": tokens["refresh_token"]}
    )
    assert refreshed.status_code == 401
    # Logging out twice, or with garbage, is harmless.
    assert (
        await client.post("/api/v1/auth/logout", json={"refresh_token": "garbage"})
    ).status_code == 204


async def test_repeated_failed_logins_are_throttled(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    email = await register(client)
    for _ in range(settings.auth.login_max_failures):
        assert (await login(client, email, "wrong password")).status_code == 401
    throttled = await login(client, email, "wrong password")
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) > 0
    # Even the right password waits until the window passes.
    assert (await login(client, email, PASSWORD)).status_code == 429
    # Other accounts are not affected.
    other = await register(client)
    assert (await login(client, other)).status_code == 200


# The two places a signed-in person's password is asked again (issue 67, item 10): what a
# stolen access token alone could try to guess it through.
RECHECKS = {
    "password change": (
        "/api/v1/users/me/password",
        lambda email, password: {"current_password": password, "new_password": "an0ther long one"},
    ),
    "account deletion": (
        "/api/v1/users/me/deletion",
        lambda email, password: {"confirm_email": email, "password": password},
    ),
}


@pytest.mark.parametrize("purpose", list(RECHECKS))
async def test_guessing_the_password_with_a_stolen_token_is_throttled_and_recorded(
    app: FastAPI, session: AsyncSession, settings: Settings, purpose: str
) -> None:
    """60 wrong current passwords were 60 x 403: no 429, nothing in the audit log."""
    path, body = RECHECKS[purpose]
    async with _client_at(app, "198.51.100.60") as owner:
        email = await register(owner)
        mine = {"Authorization": f"Bearer {(await login(owner, email)).json()['access_token']}"}
    async with _client_at(app, "203.0.113.60") as thief:
        for number in range(settings.auth.login_max_failures):
            guess = body(email, f"guess number {number}")
            wrong = await thief.post(path, headers=mine, json=guess)
            assert wrong.status_code == 403, wrong.text
        throttled = await thief.post(path, headers=mine, json=body(email, "one more guess"))
        assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0
        assert "wrong passwords" in throttled.json()["detail"]
        # Even the right one waits (the thief may have found it), and logins from there too.
        assert (await thief.post(path, headers=mine, json=body(email, PASSWORD))).status_code == 429
        assert (await login(thief, email)).status_code == 429

    user_id = (await session.execute(select(User.id).where(User.email == email))).scalar_one()
    entries = await session.execute(
        select(AuditEntry.actor_id, AuditEntry.address, AuditEntry.detail).where(
            AuditEntry.target_id == str(user_id),
            AuditEntry.action == AuditAction.password_check_failed,
        )
    )
    recorded = [(actor, address, detail["purpose"]) for actor, address, detail in entries]
    assert recorded == [(user_id, "203.0.113.60", purpose)] * settings.auth.login_max_failures
    # The owner, elsewhere, is not locked out: they can still change the password (ending the
    # thief's session) or delete the account.
    async with _client_at(app, "198.51.100.60") as owner:
        done = await owner.post(path, headers=mine, json=body(email, PASSWORD))
        assert done.status_code == 200, done.text


async def test_security_headers(client: httpx.AsyncClient) -> None:
    api = await client.get("/healthz")
    assert api.headers["x-content-type-options"] == "nosniff"
    assert api.headers["x-frame-options"] == "DENY"
    page = await client.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    docs = await client.get("/docs")
    assert docs.status_code == 200 and "content-security-policy" not in docs.headers


async def test_cors_is_off_unless_configured(
    client: httpx.AsyncClient, settings: Settings, components: Components
) -> None:
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
    response = await client.options("/api/v1/users/me", headers=preflight)
    assert "access-control-allow-origin" not in response.headers

    from docchat.main.app import attach_components, create_app

    configured = settings.model_copy(update={"cors_origins": ["https://app.example"]})
    app = create_app(configured, run_worker=False)
    attach_components(app, components)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as other:
        allowed = await other.options(
            "/api/v1/users/me", headers={**preflight, "Origin": "https://app.example"}
        )
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        refused = await other.options("/api/v1/users/me", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers


# -- the signing key (issue 13, item 1) ----------------------------------------------------


def _keyless(settings: Settings, data_dir: Path) -> Settings:
    """Settings as the run command leaves them: no AUTH_SECRET_KEY, no ENVIRONMENT."""
    auth = settings.auth.model_copy(update={"secret_key": None})
    return settings.model_copy(
        update={"auth": auth, "environment": Environment.development, "data_dir": data_dir}
    )


async def test_without_a_configured_key_a_token_signed_with_the_old_default_is_refused(
    settings: Settings, components: Components, session: AsyncSession, tmp_path: Path
) -> None:
    app = create_app(_keyless(settings, tmp_path), run_worker=False)
    attach_components(app, components)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        await admin_headers(client, session)  # an administrator exists, as on a real server
        admin = (
            await session.execute(select(User).where(User.role == Role.admin).limit(1))
        ).scalar_one()
        public = AuthSettings(_env_file=None, secret_key="change-me-in-production")  # type: ignore[call-arg, arg-type]
        forged = create_token(admin.id, "access", public)
        response = await client.get(
            "/api/v1/admin/users", headers={"Authorization": f"Bearer {forged}"}
        )
        assert response.status_code == 401
        # The server's own tokens work: it signs with the key it generated.
        email = await register(client)
        assert (await login(client, email)).status_code == 200


def test_the_generated_key_is_private_and_kept_across_restarts(
    settings: Settings, tmp_path: Path
) -> None:
    first = with_signing_key(_keyless(settings, tmp_path))
    second = with_signing_key(_keyless(settings, tmp_path))
    assert first.auth.secret_key is not None and second.auth.secret_key is not None
    key = first.auth.secret_key.get_secret_value()
    assert key == second.auth.secret_key.get_secret_value() and len(key) >= 32
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
    # Another installation gets another key.
    other = with_signing_key(_keyless(settings, tmp_path / "elsewhere"))
    assert other.auth.secret_key is not None
    assert other.auth.secret_key.get_secret_value() != key


async def test_documents_shared_by_an_admin_do_not_reveal_the_admins_id(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    shared = await upload(client, admin, "policy.txt", b"Shared policy text.", url=ADMIN_UPLOAD)
    assert shared.status_code == 202
    admin_id = (await client.get("/api/v1/users/me", headers=admin)).json()["id"]
    assert shared.json()["owner_id"] == admin_id  # the admin sees their own id
    user = await auth_headers(client)
    listed = (await client.get("/api/v1/documents", headers=user)).json()["items"]
    seen = next(item for item in listed if item["id"] == shared.json()["id"])
    assert seen["owner_id"] is None and admin_id not in str(listed)
    one = await client.get(f"/api/v1/documents/{shared.json()['id']}", headers=user)
    assert one.json()["owner_id"] is None


# -- passwords and guessing (issue 13, items 5, 6, 12) ---------------------------------------


def _client_at(app: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://docchat.test")


@pytest.mark.parametrize("password", ["password", "password123", "qwertyuiop", "ada.lovelace1"])
async def test_passwords_that_are_easy_to_guess_are_refused(
    client: httpx.AsyncClient, password: str
) -> None:
    response = await client.post(
        "/api/v1/auth/register",
        json={"email": "ada.lovelace1@example.com", "password": password},
    )
    assert response.status_code == 422
    assert "too easy to guess" in response.json()["detail"][0]["msg"]


async def test_password_hashing_runs_off_the_event_loop(client: httpx.AsyncClient) -> None:
    seen: list[str] = []
    real = passwords._hasher

    class Spy:
        def hash(self, password: str) -> str:
            seen.append(threading.current_thread().name)
            return real.hash(password)

        def verify(self, hashed: str, password: str) -> bool:
            seen.append(threading.current_thread().name)
            return real.verify(hashed, password)

    with patch.object(passwords, "_hasher", Spy()):
        email = await register(client)
        await login(client, email)
        await login(client, email, "a wrong password")
        await login(client, unique_email("nobody"), "a wrong password")
    assert len(seen) == 4
    assert threading.main_thread().name not in seen
    assert all(name.startswith("argon2") for name in seen)


async def test_one_address_guessing_many_accounts_is_throttled(
    app: FastAPI, settings: Settings
) -> None:
    async with _client_at(app, "203.0.113.7") as attacker:
        for _ in range(settings.auth.login_address_max_failures):
            response = await login(attacker, unique_email("victim"), "not their password")
            assert response.status_code == 401
        refused = await login(attacker, unique_email("victim"), "not their password")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    async with _client_at(app, "203.0.113.8") as someone_else:
        email = await register(someone_else)
        assert (await login(someone_else, email)).status_code == 200


async def test_strangers_cannot_lock_the_owner_out_of_an_account(
    app: FastAPI, settings: Settings
) -> None:
    async with _client_at(app, "198.51.100.1") as owner:
        email = await register(owner)
    attempts = settings.auth.login_account_max_failures + 10
    for number in range(attempts):
        async with _client_at(app, f"192.0.2.{number % 250}") as stranger:
            await login(stranger, email, f"guess number {number}")
    # Addresses that already guessed wrong on this account wait...
    async with _client_at(app, "192.0.2.3") as stranger:
        assert (await login(stranger, email, PASSWORD)).status_code == 429
    # ...while the owner, from an address of their own, still gets in.
    async with _client_at(app, "198.51.100.1") as owner:
        assert (await login(owner, email, PASSWORD)).status_code == 200


async def test_sign_ups_per_address_are_limited(app: FastAPI, settings: Settings) -> None:
    async with _client_at(app, "203.0.113.99") as flood:
        for _ in range(settings.auth.register_max_per_address):
            await register(flood)
        refused = await flood.post(
            "/api/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}
        )
        assert refused.status_code == 429
    async with _client_at(app, "203.0.113.100") as other:
        await register(other)


# -- an administrator promoted over an existing account (item 7) ----------------------------


@pytest.mark.parametrize("reset_password", [False, True], ids=["ADMIN_EMAIL", "create-admin"])
async def test_promoting_an_account_locks_out_whoever_registered_it(
    client: httpx.AsyncClient, session: AsyncSession, reset_password: bool
) -> None:
    squatter = unique_email("boss")
    await register(client, squatter)
    tokens = (await login(client, squatter)).json()
    old_access = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert (await client.get("/api/v1/users/me", headers=old_access)).status_code == 200

    _, action = await users_service.ensure_admin(
        session,
        email=squatter,
        password="the operator's own passphrase",
        reset_password=reset_password,
    )
    await session.commit()
    assert action == "promoted"
    assert (await client.get("/api/v1/users/me", headers=old_access)).status_code == 401
    refreshed = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": tokens["refresh_token"]}
    )
    assert refreshed.status_code == 401
    assert (await login(client, squatter)).status_code == 401
    operator = await login(client, squatter, "the operator's own passphrase")
    assert operator.status_code == 200
    admin = {"Authorization": f"Bearer {operator.json()['access_token']}"}
    assert (await client.get("/api/v1/admin/users", headers=admin)).status_code == 200


async def test_admin_email_at_start_leaves_an_existing_admin_alone(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    me = (await client.get("/api/v1/users/me", headers=admin)).json()
    _, action = await users_service.ensure_admin(
        session, email=me["email"], password="some other passphrase", reset_password=False
    )
    assert action == "unchanged"
    assert (await client.get("/api/v1/users/me", headers=admin)).status_code == 200
