"""Personal API keys: shown once, stored hashed, scoped, revocable, and usable by the real
OpenAI SDK against `/v1` (a client that cannot log in or refresh a token)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.models import ApiKey
from docchat.db import utcnow
from docchat.main.components import Components
from tests.support.documents import upload, upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import admin_headers, auth_headers

LIGHTHOUSE = "The Northwind lighthouse beam can be seen 22 nautical miles away in clear weather."


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def new_key(
    client: httpx.AsyncClient, headers: dict[str, str], *scopes: str, **extra: Any
) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/api-keys", headers=headers, json={"name": "script", "scopes": scopes, **extra}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_key_is_shown_once_and_stored_only_as_a_hash(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    created = await new_key(client, headers, "read")
    secret = created["secret"]
    assert secret.startswith("dck_") and secret.startswith(created["prefix"])
    listed = (await client.get("/api/v1/api-keys", headers=headers)).json()
    assert [key["prefix"] for key in listed] == [created["prefix"]]
    assert "secret" not in listed[0] and secret not in str(listed)
    stored = (await session.execute(select(ApiKey))).scalars().all()
    mine = next(key for key in stored if key.prefix == created["prefix"])
    assert mine.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str([vars(key) for key in stored])

    me = await client.get("/api/v1/users/me", headers=bearer(secret))
    assert me.status_code == 200
    listed = (await client.get("/api/v1/api-keys", headers=headers)).json()
    assert listed[0]["last_used_at"] is not None


async def test_the_openai_sdk_works_with_a_key(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "light.md", LIGHTHOUSE.encode())
    secret = (await new_key(client, headers, "read", "chat"))["secret"]
    sdk = sdk_for(app, secret)
    try:
        models = await sdk.models.list()
        assert models.data
        fresh_llm.script("It can be seen 22 nautical miles away [1].")
        completion = await sdk.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "How far can the Northwind light be seen?"}],
            extra_body={"index_name": "all"},
        )
        assert "22 nautical miles" in (completion.choices[0].message.content or "")
        assert "Northwind" in str(fresh_llm.last_request["messages"])  # the document was used
    finally:
        await sdk.close()


async def test_scopes_limit_what_a_key_does(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    reader = bearer((await new_key(client, headers, "read"))["secret"])
    assert (await client.get("/api/v1/documents", headers=reader)).status_code == 200
    refused = await upload(client, reader, "a.txt", b"some text")
    assert refused.status_code == 403 and "'upload' scope" in refused.json()["detail"]
    chat = await client.post("/api/v1/messages", headers=reader, json={"content": "hi"})
    assert chat.status_code == 403

    uploader = bearer((await new_key(client, headers, "upload"))["secret"])
    assert (await upload(client, uploader, "a.txt", b"some text")).status_code == 202
    # Sign-in itself needs a login: no key makes keys, changes the password or the profile.
    for method, path, body in (
        ("POST", "/api/v1/api-keys", {"name": "x", "scopes": ["read"]}),
        ("GET", "/api/v1/api-keys", None),
        ("POST", "/api/v1/users/me/password", {"current_password": "a", "new_password": "b" * 9}),
        ("PATCH", "/api/v1/users/me", {"display_name": "x"}),
    ):
        response = await client.request(method, path, headers=uploader, json=body)
        assert response.status_code == 403, (method, path, response.text)

    admin_only = await client.post(
        "/api/v1/api-keys", headers=headers, json={"name": "x", "scopes": ["admin"]}
    )
    assert admin_only.status_code == 403
    admin = await admin_headers(client, session)
    admin_key = bearer((await new_key(client, admin, "admin"))["secret"])
    assert (await client.get("/api/v1/admin/users", headers=admin_key)).status_code == 200
    assert (await client.get("/api/v1/documents", headers=admin_key)).status_code == 403
    read_key = bearer((await new_key(client, admin, "read"))["secret"])
    assert (await client.get("/api/v1/admin/users", headers=read_key)).status_code == 403


async def test_revoked_expired_and_deactivated_keys_stop_at_once(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    admin = await admin_headers(client, session)
    revoked = await new_key(client, headers, "read")
    assert (await client.get("/api/v1/chats", headers=bearer(revoked["secret"]))).status_code == 200
    gone = await client.delete(f"/api/v1/api-keys/{revoked['id']}", headers=headers)
    assert gone.status_code == 204
    after = await client.get("/api/v1/chats", headers=bearer(revoked["secret"]))
    assert after.status_code == 401 and after.headers["www-authenticate"] == "Bearer"

    expiring = await new_key(
        client, headers, "read", expires_at=(utcnow() + timedelta(days=1)).isoformat()
    )
    assert (
        await client.get("/api/v1/chats", headers=bearer(expiring["secret"]))
    ).status_code == 200
    await session.execute(
        update(ApiKey).where(ApiKey.prefix == expiring["prefix"]).values(expires_at=utcnow())
    )
    assert (
        await client.get("/api/v1/chats", headers=bearer(expiring["secret"]))
    ).status_code == 401
    past = await client.post(
        "/api/v1/api-keys",
        headers=headers,
        json={"name": "old", "scopes": ["read"], "expires_at": "2020-01-01T00:00:00Z"},
    )
    assert past.status_code == 403

    live = await new_key(client, headers, "read")
    user_id = (await client.get("/api/v1/users/me", headers=headers)).json()["id"]
    await client.patch(f"/api/v1/admin/users/{user_id}", headers=admin, json={"is_active": False})
    assert (await client.get("/api/v1/chats", headers=bearer(live["secret"]))).status_code == 401

    entries = (
        await client.get("/api/v1/admin/audit", headers=admin, params={"actor_id": user_id})
    ).json()["items"]
    actions = [entry["action"] for entry in entries]
    assert actions.count("api_key.created") == 3 and actions.count("api_key.revoked") == 1


@pytest.mark.parametrize(
    "secret",
    [
        b"dck_",
        b"dck_" + b"A" * 43,
        "dck_\u00e9\u00e9".encode(),
        b"Bearer dck_x",
        b"dck_" + b"x" * 5000,
    ],
)
async def test_made_up_keys_are_401(client: httpx.AsyncClient, secret: bytes) -> None:
    response = await client.get("/api/v1/chats", headers={"Authorization": b"Bearer " + secret})
    assert response.status_code == 401
