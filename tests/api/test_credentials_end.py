"""Credentials that follow their account: `docchat create-admin` over an account someone else
registered ends its API keys too, and a deactivated account's keys stay revoked when it is
reactivated (the owner makes new ones)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import Settings
from tests.support.processes import docchat_env
from tests.support.users import admin_headers, auth_headers, login, register, unique_email

OPERATOR_PASSWORD = "the operator's own passphrase"


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def _key(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    created = await client.post(
        "/api/v1/api-keys", headers=headers, json={"name": "waiting", "scopes": ["read", "upload"]}
    )
    assert created.status_code == 201, created.text
    key: dict[str, Any] = created.json()
    return key


async def _create_admin(settings: Settings, email: str) -> str:
    """The real command, as an operator runs it, against the test's database."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "docchat.main.cli",
        "create-admin",
        email,
        "--password",
        OPERATOR_PASSWORD,
        env=docchat_env(DATABASE_URL=settings.database_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()
    return output.decode()


async def test_create_admin_over_a_squatted_account_ends_its_api_keys(
    live_client: httpx.AsyncClient, settings: Settings
) -> None:
    squatter = unique_email("boss")
    await register(live_client, squatter)
    tokens = (await login(live_client, squatter)).json()
    key = await _key(live_client, {"Authorization": f"Bearer {tokens['access_token']}"})
    assert (
        await live_client.get("/api/v1/chats", headers=bearer(key["secret"]))
    ).status_code == 200

    said = await _create_admin(settings, squatter)
    assert "promoted" in said and "API key" in said

    refused = await live_client.get("/api/v1/documents", headers=bearer(key["secret"]))
    assert refused.status_code == 401, "the squatter's key acts as the new administrator"
    operator = await login(live_client, squatter, OPERATOR_PASSWORD)
    admin = {"Authorization": f"Bearer {operator.json()['access_token']}"}
    listed = (await live_client.get("/api/v1/api-keys", headers=admin)).json()
    assert [k["id"] for k in listed] == [key["id"]] and listed[0]["revoked_at"] is not None
    # A key the administrator makes afterwards works.
    fresh = await _key(live_client, admin)
    assert (
        await live_client.get("/api/v1/documents", headers=bearer(fresh["secret"]))
    ).status_code == 200


async def test_a_deactivated_accounts_keys_stay_revoked_after_reactivation(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    headers = await auth_headers(client)
    user_id = (await client.get("/api/v1/users/me", headers=headers)).json()["id"]
    key = await _key(client, headers)

    for active in (False, True):
        changed = await client.patch(
            f"/api/v1/admin/users/{user_id}", headers=admin, json={"is_active": active}
        )
        assert changed.status_code == 200, changed.text
    assert (await client.get("/api/v1/chats", headers=bearer(key["secret"]))).status_code == 401
    email = (await client.get(f"/api/v1/admin/users/{user_id}", headers=admin)).json()["email"]
    again = {"Authorization": f"Bearer {(await login(client, email)).json()['access_token']}"}
    listed = (await client.get("/api/v1/api-keys", headers=again)).json()
    assert listed[0]["revoked_at"] is not None, "the list says why the script stopped"
    fresh = await _key(client, again)
    assert (await client.get("/api/v1/chats", headers=bearer(fresh["secret"]))).status_code == 200
