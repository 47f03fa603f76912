"""Chats as files and chats found again (issue 19): export as Markdown and JSON with each
answer's sources; full-text search over titles and messages, paged, the owner's chats only."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import httpx

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers


async def _chat_about_ferries(
    client: httpx.AsyncClient, components: Components, llm: ScriptedLLM, headers: dict[str, str]
) -> dict[str, Any]:
    await upload_and_process(
        client, components, headers, "timetable.txt", b"The island ferries leave from pier 4."
    )
    llm.script("From pier 4 [1].")
    response = await ask(client, headers, "Where do the island ferries leave from?")
    assert response.status_code == 200, response.text
    exchange: dict[str, Any] = response.json()
    return exchange


async def test_a_chat_exports_as_markdown_and_json_with_its_sources(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    exchange = await _chat_about_ferries(client, components, fresh_llm, headers)
    url = f"/api/v1/chats/{exchange['chat_id']}/export"
    await client.patch(
        f"/api/v1/chats/{exchange['chat_id']}", headers=headers, json={"title": "Ferries/Piers ü"}
    )

    markdown = await client.get(url, headers=headers)
    assert markdown.status_code == 200
    assert markdown.headers["content-type"].startswith("text/markdown")
    disposition = unquote(markdown.headers["content-disposition"])
    assert disposition.startswith("attachment") and disposition.endswith("FerriesPiers ü.md")
    text = markdown.text
    assert text.startswith("# Ferries/Piers ü\n")
    assert "**You** · " in text and "Where do the island ferries leave from?" in text
    assert "**docchat** · " in text and "From pier 4 [1]." in text
    assert '1. timetable.txt: "The island ferries leave from pier 4."' in text

    exported = await client.get(url, headers=headers, params={"format": "json"})
    assert exported.headers["content-type"].startswith("application/json")
    document = json.loads(exported.text)
    assert document["chat"]["id"] == exchange["chat_id"]
    assert [m["role"] for m in document["messages"]] == ["user", "assistant"]
    assert document["messages"][1]["sources"][0]["document_name"] == "timetable.txt"

    stranger = await auth_headers(client)
    assert (await client.get(url, headers=stranger)).status_code == 404
    bad = await client.get(url, headers=headers, params={"format": "pdf"})
    assert bad.status_code == 422


async def test_chats_are_found_by_words_in_their_messages_or_title(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    ferries = await _chat_about_ferries(client, components, fresh_llm, headers)
    fresh_llm.script("Hello!")
    other = (await ask(client, headers, "Say hello")).json()
    titled = await client.post("/api/v1/chats", headers=headers, json={"title": "Ferry budget"})

    async def found(query: str, **params: Any) -> list[str]:
        response = await client.get("/api/v1/chats", headers=headers, params={"q": query, **params})
        assert response.status_code == 200, response.text
        return [chat["id"] for chat in response.json()["items"]]

    # "ferry" finds "ferries" (stemming) in a message, and a title.
    assert set(await found("ferry")) == {ferries["chat_id"], titled.json()["id"]}
    assert await found("pier") == [ferries["chat_id"]]  # in the answer, not the question
    assert await found('"island ferries" -budget') == [ferries["chat_id"]]
    assert await found("hello") == [other["chat_id"]]
    assert await found("submarine") == []
    page = (
        await client.get("/api/v1/chats", headers=headers, params={"q": "ferry", "limit": 1})
    ).json()
    assert page["total"] == 2 and len(page["items"]) == 1
    # Each result says where it matched: the words around it in a message; a chat found by
    # its title alone has none.
    listed = (await client.get("/api/v1/chats", headers=headers, params={"q": "pier"})).json()
    [result] = listed["items"]
    assert "pier 4" in result["snippet"] and len(result["snippet"].split()) <= 20
    by_title = (await client.get("/api/v1/chats", headers=headers, params={"q": "budget"})).json()
    assert [chat["snippet"] for chat in by_title["items"]] == [None]
    plain = (await client.get("/api/v1/chats", headers=headers)).json()
    assert all(chat["snippet"] is None for chat in plain["items"])

    # Only the owner's chats: another user's search finds none of these.
    stranger = await auth_headers(client)
    response = await client.get("/api/v1/chats", headers=stranger, params={"q": "ferry"})
    assert response.json()["total"] == 0


async def test_a_deleted_chat_comes_back_with_its_messages_for_its_owner_only(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("Hello!")
    chat_id = (await ask(client, headers, "Say hello")).json()["chat_id"]
    assert (await client.delete(f"/api/v1/chats/{chat_id}", headers=headers)).status_code == 204
    assert (await client.get(f"/api/v1/chats/{chat_id}", headers=headers)).status_code == 404

    stranger = await auth_headers(client)
    url = f"/api/v1/chats/{chat_id}/restore"
    assert (await client.post(url, headers=stranger)).status_code == 404
    restored = await client.post(url, headers=headers)
    assert restored.status_code == 200 and restored.json()["id"] == chat_id
    messages = (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)).json()
    assert [m["content"] for m in messages["items"]] == ["Say hello", "Hello!"]
    assert (await client.post(url, headers=headers)).status_code == 404  # not deleted now
