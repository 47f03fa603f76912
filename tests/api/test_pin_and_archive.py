"""Pinned and archived chats (issue 40): pinned chats head the list, archived ones leave it
(a search still finds them) and come back when asked something; neither counts as activity."""

from __future__ import annotations

import httpx

from tests.support.chat import ask
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers


async def _titles(client: httpx.AsyncClient, headers: dict[str, str], **params: str) -> list[str]:
    listed = await client.get("/api/v1/chats", headers=headers, params=params)
    assert listed.status_code == 200, listed.text
    return [chat["title"] for chat in listed.json()["items"]]


async def test_pinned_chats_come_first_and_archived_ones_leave_the_list(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    ids = {}
    for title in ("oldest", "middle", "newest"):
        created = await client.post("/api/v1/chats", headers=headers, json={"title": title})
        ids[title] = created.json()["id"]
    assert await _titles(client, headers) == ["newest", "middle", "oldest"]

    pinned = await client.patch(
        f"/api/v1/chats/{ids['oldest']}", headers=headers, json={"pinned": True}
    )
    assert pinned.status_code == 200 and pinned.json()["pinned_at"] is not None
    # Pinning is not activity: the chat keeps its last-active time.
    assert (
        pinned.json()["updated_at"]
        < (await client.get(f"/api/v1/chats/{ids['middle']}", headers=headers)).json()["updated_at"]
    )
    assert await _titles(client, headers) == ["oldest", "newest", "middle"]

    archived = await client.patch(
        f"/api/v1/chats/{ids['newest']}", headers=headers, json={"archived": True}
    )
    assert archived.json()["archived_at"] is not None
    assert await _titles(client, headers) == ["oldest", "middle"]
    assert await _titles(client, headers, archived="only") == ["newest"]
    assert await _titles(client, headers, archived="include") == ["oldest", "newest", "middle"]
    # A search finds archived chats too (the title matches).
    assert await _titles(client, headers, q="newest") == ["newest"]
    assert await _titles(client, headers, q="newest", archived="exclude") == []

    # Asking something in an archived chat brings it back to the list, at the top after the pins.
    fresh_llm.script("Back again.")
    await ask(client, headers, "Still here?", chat_id=ids["newest"])
    assert await _titles(client, headers) == ["oldest", "newest", "middle"]

    unpinned = await client.patch(
        f"/api/v1/chats/{ids['oldest']}", headers=headers, json={"pinned": False}
    )
    assert unpinned.json()["pinned_at"] is None
    assert await _titles(client, headers) == ["newest", "middle", "oldest"]


async def test_an_unknown_archive_filter_is_refused(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    refused = await client.get("/api/v1/chats", headers=headers, params={"archived": "yes"})
    assert refused.status_code == 422 and "exclude" in refused.text
