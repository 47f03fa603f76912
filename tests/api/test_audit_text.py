"""User-chosen text in the audit log (security issue): a failed login's username, a
collection's name. Kept escaped, one line, in logical order and cut to length, so it cannot
forge lines or reorder what the administrator's view shows."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from tests.support.users import admin_headers, auth_headers, login

FORGED = "evil\r\nadmin logged in\u202e"
RAW_CHARACTERS = ("\r", "\n", "\u202e", "\u2028", "\u2066", "\x00", "\x1b")


async def _audit(
    client: httpx.AsyncClient, admin: dict[str, str], **filters: Any
) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/admin/audit", headers=admin, params=filters)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _has_raw_characters(text: str) -> bool:
    return any(character in text for character in RAW_CHARACTERS)


async def test_a_failed_logins_username_is_kept_escaped(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    assert (await login(client, FORGED)).status_code == 401

    entries = await _audit(client, admin, action="auth.login_failed")
    assert entries[0]["actor_email"] == "evil\\r\\nadmin logged in\\u202e"
    assert not _has_raw_characters(entries[0]["actor_email"])


async def test_a_long_username_of_every_kind_of_control_is_cut_to_one_escaped_line(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    username = "\u2066a\u2028b\x1bc\\u202e" + "x" * 5000
    assert (await login(client, username)).status_code == 401

    stored = (await _audit(client, admin, action="auth.login_failed"))[0]["actor_email"]
    assert stored.startswith("\\u2066a\\u2028b\\u001bc\\\\u202e")
    assert len(stored) == 320 and stored.endswith("…")
    assert not _has_raw_characters(stored)


async def test_a_collection_name_is_kept_escaped(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    owner = await auth_headers(client)
    created = await client.post(
        "/api/v1/collections", headers=owner, json={"name": "Orion\u202e\r\nfdp.exe"}
    )
    assert created.status_code == 201, created.text

    entries = await _audit(client, admin, action="collection.created")
    assert entries[0]["detail"]["collection"] == "Orion\\u202e\\r\\nfdp.exe"
