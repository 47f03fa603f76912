from __future__ import annotations

import uuid

import httpx

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.users import auth_headers


async def test_first_message_names_the_chat_ending_at_a_word(client: httpx.AsyncClient) -> None:
    """Titles were the question's first 50 characters, cut in mid-word ("…a suspension bri")."""
    headers = await auth_headers(client)
    content = "Please explain   the difference\nbetween a suspension bridge and a cable-stayed one"
    chat_id = (await ask(client, headers, content)).json()["chat_id"]
    chat = (await client.get(f"/api/v1/chats/{chat_id}", headers=headers)).json()
    assert chat["title"] == "Please explain the difference between a…"
    short = (await ask(client, headers, "  Where is\nthe ferry?  ")).json()["chat_id"]
    assert (await client.get(f"/api/v1/chats/{short}", headers=headers)).json()["title"] == (
        "Where is the ferry?"
    )


async def test_chat_crud_and_listing(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    category = (
        await client.post("/api/v1/categories", headers=headers, json={"name": "trips"})
    ).json()
    first = (await client.post("/api/v1/chats", headers=headers, json={"title": "First"})).json()
    second = (
        await client.post(
            "/api/v1/chats",
            headers=headers,
            json={"title": "Second", "category_id": category["id"]},
        )
    ).json()
    assert first["document_ids"] == []

    listing = (await client.get("/api/v1/chats", headers=headers)).json()
    assert [c["title"] for c in listing["items"]] == ["Second", "First"] and listing["total"] == 2
    # Activity moves a chat to the top.
    await ask(client, headers, "hello", chat_id=first["id"])
    listing = (await client.get("/api/v1/chats?limit=1", headers=headers)).json()
    assert [c["title"] for c in listing["items"]] == ["First"] and listing["total"] == 2
    filtered = (
        await client.get(f"/api/v1/chats?category_id={category['id']}", headers=headers)
    ).json()
    assert [c["id"] for c in filtered["items"]] == [second["id"]]

    renamed = await client.patch(
        f"/api/v1/chats/{first['id']}", headers=headers, json={"title": "Renamed"}
    )
    assert renamed.status_code == 200 and renamed.json()["title"] == "Renamed"
    assert (await client.delete(f"/api/v1/chats/{first['id']}", headers=headers)).status_code == 204
    assert (await client.get(f"/api/v1/chats/{first['id']}", headers=headers)).status_code == 404
    assert (
        await client.get(f"/api/v1/chats/{first['id']}/messages", headers=headers)
    ).status_code == 404
    assert (await ask(client, headers, "still there?", chat_id=first["id"])).status_code == 404
    assert (await client.get("/api/v1/chats", headers=headers)).json()["total"] == 1


async def test_messages_are_paginated_oldest_first(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    chat_id = None
    for index in range(3):
        chat_id = (await ask(client, headers, f"q{index}", chat_id=chat_id)).json()["chat_id"]
    page = (
        await client.get(f"/api/v1/chats/{chat_id}/messages?skip=1&limit=2", headers=headers)
    ).json()
    assert page["total"] == 6
    assert page["items"][0]["role"] == "assistant"
    assert page["items"][1]["content"] == "q1"


async def test_link_and_unlink_documents(client: httpx.AsyncClient, components: Components) -> None:
    alice = await auth_headers(client)
    bob = await auth_headers(client)
    document = await upload_and_process(client, components, alice, "a.md", b"alpha text")
    foreign = await upload_and_process(client, components, bob, "b.md", b"bravo text")
    chat = (await client.post("/api/v1/chats", headers=alice, json={})).json()
    url = f"/api/v1/chats/{chat['id']}/documents"

    linked = await client.post(url, headers=alice, json={"document_ids": [document["id"]]})
    assert linked.status_code == 200 and linked.json()["document_ids"] == [document["id"]]
    again = await client.post(url, headers=alice, json={"document_ids": [document["id"]]})
    assert again.json()["document_ids"] == [document["id"]]
    detail = (await client.get(f"/api/v1/chats/{chat['id']}", headers=alice)).json()
    assert detail["documents"] == [{"id": document["id"], "filename": "a.md"}]
    assert (
        await client.post(url, headers=alice, json={"document_ids": [foreign["id"]]})
    ).status_code == 404
    assert (
        await client.post(url, headers=bob, json={"document_ids": [foreign["id"]]})
    ).status_code == 404

    assert (await client.delete(f"{url}/{document['id']}", headers=alice)).status_code == 204
    assert (await client.delete(f"{url}/{document['id']}", headers=alice)).status_code == 404
    detail = (await client.get(f"/api/v1/chats/{chat['id']}", headers=alice)).json()
    assert detail["document_ids"] == [] and detail["documents"] == []

    # A linked document that is deleted later is no longer named by the chat.
    await client.post(url, headers=alice, json={"document_ids": [document["id"]]})
    doomed = await upload_and_process(client, components, alice, "doomed.md", b"delta text")
    await client.post(url, headers=alice, json={"document_ids": [doomed["id"]]})
    await client.delete(f"/api/v1/documents/{doomed['id']}", headers=alice)
    detail = (await client.get(f"/api/v1/chats/{chat['id']}", headers=alice)).json()
    assert detail["documents"] == [{"id": document["id"], "filename": "a.md"}]


async def test_new_chat_with_documents_and_category_from_the_first_message(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "a.md", b"alpha text")
    category = (await client.post("/api/v1/categories", headers=headers, json={"name": "c"})).json()
    body = (
        await ask(
            client,
            headers,
            "about alpha",
            document_ids=[document["id"]],
            category_id=category["id"],
        )
    ).json()
    chat = (await client.get(f"/api/v1/chats/{body['chat_id']}", headers=headers)).json()
    assert chat["document_ids"] == [document["id"]] and chat["category_id"] == category["id"]
    other = await auth_headers(client)
    response = await ask(client, other, "x", category_id=category["id"])
    assert response.status_code == 404
    assert (await client.get(f"/api/v1/chats/{uuid.uuid4()}", headers=headers)).status_code == 404
