"""Quotas set by administrators: model tokens per day (every answer path) and stored bytes."""

from __future__ import annotations

import httpx
import openai
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import Settings
from tests.support.chat import ask
from tests.support.documents import upload
from tests.support.llm_server import ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import admin_headers, auth_headers


async def _user(
    client: httpx.AsyncClient, session: AsyncSession
) -> tuple[dict[str, str], dict[str, str], str]:
    admin = await admin_headers(client, session)
    user = await auth_headers(client)
    user_id = (await client.get("/api/v1/users/me", headers=user)).json()["id"]
    return admin, user, user_id


async def test_daily_tokens_run_out_on_every_answer_path(
    app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, fresh_llm: ScriptedLLM
) -> None:
    admin, user, user_id = await _user(client, session)
    limited = await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"daily_token_limit": 30}
    )
    assert limited.status_code == 200 and limited.json()["daily_token_limit"] == 30
    fresh_llm.script("Hello there, how can I help you today with your documents?")
    first = await ask(client, user, "Hello, who are you and what can you do for me?")
    assert first.status_code == 200, first.text

    usage = (await client.get("/api/v1/users/me/usage", headers=user)).json()
    spent = first.json()["assistant_message"]
    assert usage["tokens_today"] == spent["prompt_tokens"] + spent["completion_tokens"] >= 30
    assert usage["daily_token_limit"] == 30
    assert usage["max_upload_bytes"] == 2 * 1024 * 1024  # the web app checks files against it

    refused = await ask(client, user, "And another question?")
    assert refused.status_code == 429
    assert "Daily token quota reached" in refused.json()["detail"]
    assert 0 < int(refused.headers["retry-after"]) <= 86_401
    stream = await client.post(
        "/api/v1/messages/stream", headers=user, json={"content": "Streamed question?"}
    )
    assert stream.status_code == 429
    token = user["Authorization"].removeprefix("Bearer ")
    sdk = sdk_for(app, token)
    try:
        with pytest.raises(openai.RateLimitError):
            await sdk.chat.completions.create(
                model="scripted-model", messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        await sdk.close()
    assert len(fresh_llm.requests) == 1  # nothing refused reached the model

    # 0 lifts the limit for this user; null returns to the server's default (none here).
    await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"daily_token_limit": 0}
    )
    assert (await ask(client, user, "Now?")).status_code == 200
    reset = await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"daily_token_limit": None}
    )
    assert reset.json()["daily_token_limit"] is None
    audit = await client.get(
        "/api/v1/admin/audit",
        headers=admin,
        params={"action": "user.quota_changed", "target_id": user_id},
    )
    assert audit.json()["total"] == 3


async def test_the_server_default_applies_until_an_administrator_overrides_it(
    client: httpx.AsyncClient, session: AsyncSession, settings: Settings, fresh_llm: ScriptedLLM
) -> None:
    admin, user, user_id = await _user(client, session)
    settings.quota.daily_tokens = 1
    try:
        assert (await ask(client, user, "First question")).status_code == 200
        assert (await ask(client, user, "Second question")).status_code == 429
        await client.patch(
            f"/api/v1/admin/users/{user_id}", headers=admin, json={"daily_token_limit": 100_000}
        )
        assert (await ask(client, user, "Third question")).status_code == 200
    finally:
        settings.quota.daily_tokens = 0


async def test_uploads_over_the_storage_quota_are_refused_and_nothing_is_kept(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin, user, user_id = await _user(client, session)
    await client.patch(
        f"/api/v1/admin/users/{user_id}", headers=admin, json={"storage_limit_mb": 1}
    )
    text = ("A line of plain text for the storage quota test. " * 14_000).encode()
    assert (await upload(client, user, "first.txt", text)).status_code == 202
    refused = await upload(client, user, "second.txt", text + b"(another file)")
    assert refused.status_code == 429
    assert "Storage quota exceeded" in refused.json()["detail"]
    documents = (await client.get("/api/v1/documents", headers=user)).json()
    assert documents["total"] == 1
    usage = (await client.get("/api/v1/users/me/usage", headers=user)).json()
    assert usage["stored_bytes"] == len(text) and usage["storage_limit_bytes"] == 1024 * 1024
