from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from jose import jwt
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.security import create_token
from docchat.auth.service import REGISTRATION_RECEIVED
from docchat.config import AuthSettings, Settings, get_settings
from docchat.main.cli import main
from docchat.users import service as users_service
from docchat.users.emails import InvalidEmail
from tests.support.users import PASSWORD, admin_headers, auth_headers, login, register, unique_email


async def test_register_login_me(client: httpx.AsyncClient) -> None:
    email = unique_email()
    response = await client.post(
        "/api/v1/auth/register",
        json={"email": email, "password": PASSWORD, "display_name": "Ada"},
    )
    assert response.status_code == 201
    body = response.json()
    assert body == {"email": email, "detail": REGISTRATION_RECEIVED}

    tokens = (await login(client, email)).json()
    assert tokens["token_type"] == "bearer" and tokens["expires_in"] > 0
    me = await client.get(
        "/api/v1/users/me", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert me.status_code == 200
    me_body = me.json()
    assert me_body["email"] == email and me_body["role"] == "user"
    assert me_body["display_name"] == "Ada"
    assert "password_hash" not in me_body and "$argon2" not in str(me_body)


async def test_email_is_case_insensitive(client: httpx.AsyncClient) -> None:
    email = unique_email()
    await register(client, email)
    assert (await login(client, email.upper())).status_code == 200
    duplicate = await client.post(
        "/api/v1/auth/register",
        json={"email": email.upper(), "password": "another horse battery"},
    )
    assert duplicate.status_code == 201
    # Nothing was created or changed: the first password still logs in, the second does not.
    assert (await login(client, email)).status_code == 200
    assert (await login(client, email, "another horse battery")).status_code == 401


async def test_sign_up_does_not_reveal_which_emails_have_accounts(
    client: httpx.AsyncClient,
) -> None:
    taken = await register(client)
    free = unique_email()
    answers = [
        await client.post(
            "/api/v1/auth/register", json={"email": email, "password": "purple otter lamp"}
        )
        for email in (taken, free)
    ]
    assert [answer.status_code for answer in answers] == [201, 201]
    assert answers[0].json() == {"email": taken, "detail": REGISTRATION_RECEIVED}
    assert answers[1].json() == {"email": free, "detail": REGISTRATION_RECEIVED}
    assert (await login(client, free, "purple otter lamp")).status_code == 200
    assert (await login(client, taken, "purple otter lamp")).status_code == 401


@pytest.mark.parametrize(
    "payload",
    [
        {"email": "not-an-email", "password": PASSWORD},
        {"email": "short@example.com", "password": "short"},
        {"password": PASSWORD},
    ],
)
async def test_invalid_registration_is_422(
    client: httpx.AsyncClient, payload: dict[str, str]
) -> None:
    response = await client.post("/api/v1/auth/register", json=payload)
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list)


@pytest.mark.parametrize(
    ("email", "said"),
    [
        ("someone@example.test", "the part after the @ is a reserved name"),
        ("no-at-sign", "That email address is not valid. An email address must have an @-sign."),
    ],
)
async def test_a_bad_email_address_is_explained_in_words(
    client: httpx.AsyncClient, email: str, said: str
) -> None:
    """pydantic's "value is not a valid email address: ... special-use or reserved name" went to
    the sign-up form as it was (issue 40)."""
    response = await client.post(
        "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
    )
    assert response.status_code == 422
    message = response.json()["detail"][0]["msg"]
    assert said in message and "value is not" not in message and "special-use" not in message


@pytest.mark.parametrize(
    "email", ["someone@example.test", "ops@corp.local", "no-at-sign", "Ada.{}@Example.COM"]
)
async def test_sign_up_and_a_new_administrator_follow_one_rule_for_addresses(
    client: httpx.AsyncClient, session: AsyncSession, email: str
) -> None:
    """Sign-up refused `.test` addresses that `docchat create-admin` and ADMIN_EMAIL made
    administrators of (issue 67, item 10): both now refuse them, in the same words."""
    email = email.format(uuid.uuid4().hex[:8])
    signed_up = await client.post(
        "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
    )
    try:
        admin, _ = await users_service.ensure_admin(
            session, email=email, password=PASSWORD, reset_password=True
        )
    except InvalidEmail as exc:
        refused = str(exc)
    else:
        assert signed_up.status_code == 201, signed_up.text
        assert admin.email == signed_up.json()["email"] == email.lower()
        return
    assert signed_up.status_code == 422
    assert signed_up.json()["detail"][0]["msg"] == refused


def test_create_admin_says_why_it_refuses_an_address(
    monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        with pytest.raises(SystemExit, match="reserved name"):
            main(["create-admin", "root@docchat.test", "--password", PASSWORD])
    finally:
        get_settings.cache_clear()


async def test_wrong_password_and_unknown_email_look_the_same(client: httpx.AsyncClient) -> None:
    email = await register(client)
    wrong = await login(client, email, "wrong password!")
    unknown = await login(client, unique_email("nobody"), "wrong password!")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() == {"detail": "Incorrect email or password"}
    assert wrong.headers["www-authenticate"] == "Bearer"


async def test_refresh_gives_new_tokens_and_refuses_access_tokens(
    client: httpx.AsyncClient,
) -> None:
    email = await register(client)
    tokens = (await login(client, email)).json()
    refreshed = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": tokens["refresh_token"]}
    )
    assert refreshed.status_code == 200
    new_access = refreshed.json()["access_token"]
    me = await client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {new_access}"})
    assert me.status_code == 200

    wrong_kind = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": tokens["access_token"]}
    )
    assert wrong_kind.status_code == 401
    # A refresh token is not an access token either.
    me = await client.get(
        "/api/v1/users/me", headers={"Authorization": f"Bearer {tokens['refresh_token']}"}
    )
    assert me.status_code == 401


async def test_missing_token_is_401_with_challenge(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/users/me")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


async def test_expired_token_is_401(client: httpx.AsyncClient, settings: Settings) -> None:
    email = await register(client)
    me = (await client.get("/api/v1/users/me", headers=await _headers(client, email))).json()
    past = datetime.now(UTC) - timedelta(hours=2)
    token = create_token(uuid.UUID(me["id"]), "access", settings.auth, now=past)
    response = await client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


async def test_forged_tokens_are_401(client: httpx.AsyncClient, settings: Settings) -> None:
    email = await register(client)
    me = (await client.get("/api/v1/users/me", headers=await _headers(client, email))).json()
    user_id = uuid.UUID(me["id"])
    other_key = AuthSettings(_env_file=None, secret_key="another-secret-entirely-0123456789")  # type: ignore[call-arg, arg-type]
    forged = create_token(user_id, "access", other_key)
    none_alg = jwt.encode(
        {"sub": str(user_id), "type": "access", "exp": 9999999999}, "", algorithm="HS256"
    )
    none_alg = ".".join(["eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0", *none_alg.split(".")[1:2], ""])
    for token in (forged, none_alg, "garbage", "a.b.c"):
        response = await client.get(
            "/api/v1/users/me", headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 401, token


async def test_token_of_deleted_user_is_401(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    from docchat.users.models import User

    user = await session.get(User, uuid.UUID(me["id"]))
    assert user is not None
    user.is_active = False
    await session.commit()
    assert (await client.get("/api/v1/users/me", headers=headers)).status_code == 401


async def test_update_me(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    response = await client.patch(
        "/api/v1/users/me",
        headers=headers,
        json={"display_name": "Grace", "preferred_model": "m-1"},
    )
    assert response.status_code == 200
    assert response.json()["display_name"] == "Grace"
    assert response.json()["preferred_model"] == "m-1"


async def test_update_me_with_nulls_clears_fields(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    await client.patch(
        "/api/v1/users/me", headers=headers, json={"display_name": "G", "preferred_model": "m"}
    )
    response = await client.patch(
        "/api/v1/users/me", headers=headers, json={"display_name": None, "preferred_model": ""}
    )
    assert response.status_code == 200
    assert response.json()["display_name"] == "" and response.json()["preferred_model"] is None


async def test_text_with_nul_characters_is_422(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    response = await client.patch(
        "/api/v1/users/me", headers=headers, json={"display_name": "a\u0000b"}
    )
    assert response.status_code == 422
    assert "NUL" in response.json()["detail"][0]["msg"]
    chat = await client.post("/api/v1/messages", headers=headers, json={"content": "hi\u0000"})
    assert chat.status_code == 422


async def test_admin_routes_refuse_users(client: httpx.AsyncClient, session: AsyncSession) -> None:
    user = await auth_headers(client)
    assert (await client.get("/api/v1/admin/users", headers=user)).status_code == 403
    assert (await client.get("/api/v1/admin/usage", headers=user)).status_code == 403
    admin = await admin_headers(client, session)
    listing = await client.get("/api/v1/admin/users", headers=admin)
    assert listing.status_code == 200
    assert listing.json()["total"] >= 2


async def test_registration_can_be_switched_off(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    settings.auth.registration_enabled = False
    try:
        response = await client.post(
            "/api/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}
        )
    finally:
        settings.auth.registration_enabled = True
    assert response.status_code == 403


async def _headers(client: httpx.AsyncClient, email: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {(await login(client, email)).json()['access_token']}"}
