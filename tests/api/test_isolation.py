"""Every way one user might reach another's data, tried in one place.

Alice owns a document, a chat and a category. Bob tries each door; afterwards no request the
model received may contain a word of Alice's document.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from fastapi import FastAPI

from docchat.main.components import Components
from tests.support.chat import ask, ask_streaming
from tests.support.documents import upload_and_process
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

SECRET = (
    "Project Nightjar launches on the ninth of March from the Kiruna site with budget 4.2 million."
)
# Phrases only Alice's document contains (questions may name the project, never these).
MARKERS = ("ninth of March", "4.2 million")


@pytest.fixture(autouse=True)
def no_foreign_chunk_reaches_the_model(fresh_llm: ScriptedLLM) -> Iterator[None]:
    yield
    for request in fresh_llm.requests:
        text = json.dumps(request)
        assert not any(marker in text for marker in MARKERS), "a foreign chunk reached the LLM"


@pytest_asyncio.fixture
async def alice(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> dict[str, Any]:
    headers = await auth_headers(client)
    category = (
        await client.post("/api/v1/categories", headers=headers, json={"name": "secret"})
    ).json()
    document = await upload_and_process(
        client,
        components,
        headers,
        "plan.md",
        SECRET.encode(),
        data={"category_id": category["id"]},
    )
    chat = (await ask(client, headers, "hello", document_ids=[document["id"]])).json()
    fresh_llm.reset()  # from here on, only what the tests send counts
    return {
        "headers": headers,
        "document": document["id"],
        "chat": chat["chat_id"],
        "answer": chat["assistant_message"]["id"],
        "question": chat["user_message"]["id"],
        "category": category["id"],
    }


@pytest_asyncio.fixture
async def bob(client: httpx.AsyncClient) -> dict[str, str]:
    return await auth_headers(client)


async def test_direct_reads_and_writes_are_404(
    client: httpx.AsyncClient, alice: dict[str, Any], bob: dict[str, str]
) -> None:
    doc, chat, category = alice["document"], alice["chat"], alice["category"]
    attempts = [
        ("GET", f"/api/v1/documents/{doc}", None),
        ("GET", f"/api/v1/documents/{doc}/file", None),
        ("GET", f"/api/v1/documents/{doc}/passages", None),
        ("POST", f"/api/v1/documents/{doc}/reprocess", None),
        ("POST", f"/api/v1/documents/{doc}/versions", None),
        ("DELETE", f"/api/v1/documents/{doc}", None),
        ("GET", f"/api/v1/chats/{chat}", None),
        ("GET", f"/api/v1/chats/{chat}/messages", None),
        ("GET", f"/api/v1/chats/{chat}/export", None),
        ("POST", f"/api/v1/chats/{chat}/restore", None),
        ("GET", f"/api/v1/chats/{chat}/export?format=json", None),
        ("PATCH", f"/api/v1/chats/{chat}", {"title": "mine now"}),
        ("DELETE", f"/api/v1/chats/{chat}", None),
        ("PUT", f"/api/v1/chats/{chat}/messages/{alice['answer']}/feedback", {"rating": "down"}),
        ("DELETE", f"/api/v1/chats/{chat}/messages/{alice['answer']}/feedback", None),
        ("POST", f"/api/v1/chats/{chat}/documents", {"document_ids": [doc]}),
        ("DELETE", f"/api/v1/chats/{chat}/documents/{doc}", None),
        ("GET", f"/api/v1/categories/{category}", None),
        ("PATCH", f"/api/v1/categories/{category}", {"name": "x"}),
        ("DELETE", f"/api/v1/categories/{category}", None),
        ("POST", "/api/v1/chats", {"document_ids": [doc]}),
        ("POST", "/api/v1/chats", {"category_id": category}),
        ("GET", f"/api/v1/documents/{uuid.uuid4()}", None),  # a guessed id
        ("GET", f"/api/v1/chats/{uuid.uuid4()}", None),
    ]
    for method, url, body in attempts:
        response = await client.request(method, url, headers=bob, json=body)
        assert response.status_code == 404, (method, url, response.status_code)
    assert (await client.get("/api/v1/documents", headers=bob)).json()["total"] == 0
    assert (await client.get("/api/v1/chats", headers=bob)).json()["total"] == 0
    searched = await client.get("/api/v1/chats", headers=bob, params={"q": "hello"})
    assert searched.json()["total"] == 0  # Alice's chat is titled "hello"
    # Alice's things are untouched.
    assert (await client.get(f"/api/v1/chats/{chat}", headers=alice["headers"])).json()[
        "title"
    ] == "hello"
    assert (
        await client.get(f"/api/v1/documents/{doc}", headers=alice["headers"])
    ).status_code == 200


async def test_messages_cannot_reach_foreign_documents_or_chats(
    client: httpx.AsyncClient, alice: dict[str, Any], bob: dict[str, str], fresh_llm: ScriptedLLM
) -> None:
    question = "When does Project Nightjar launch from Kiruna?"
    assert (await ask(client, bob, question, document_ids=[alice["document"]])).status_code == 404
    assert (await ask(client, bob, question, chat_id=alice["chat"])).status_code == 404
    assert (await ask(client, bob, question, category_id=alice["category"])).status_code == 404
    response, _ = await ask_streaming(client, bob, question, document_ids=[alice["document"]])
    assert response.status_code == 404
    # Regenerating Alice's question (which carries her document) from her chat or from his.
    replacing = {"replaces": alice["question"]}
    assert (await ask(client, bob, question, chat_id=alice["chat"], **replacing)).status_code == 404
    own_chat = (await ask(client, bob, "hello")).json()["chat_id"]
    assert (await ask(client, bob, question, chat_id=own_chat, **replacing)).status_code == 404
    # Searching "everything" means everything Bob may read: nothing of Alice's.
    answer = (await ask(client, bob, question)).json()["assistant_message"]
    assert answer["meta"]["documents_searched"] == 0 and answer["sources"] is None


async def test_tool_calls_cannot_name_foreign_documents(
    client: httpx.AsyncClient, alice: dict[str, Any], bob: dict[str, str], fresh_llm: ScriptedLLM
) -> None:
    arguments = json.dumps(
        {"query": "Nightjar Kiruna launch", "document_ids": [alice["document"]], "owner_id": "*"}
    )
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "semantic_search", "arguments": arguments},
    }
    fresh_llm.script(Reply(tool_calls=[call]), "Nothing found.")
    response = await ask(client, bob, "Nightjar?", options={"retrieval": "tool"})
    assert response.status_code == 200


async def test_openai_index_names_are_per_user(
    app: FastAPI, alice: dict[str, Any], bob: dict[str, str], fresh_llm: ScriptedLLM
) -> None:
    sdk = sdk_for(app, bob["Authorization"][7:])
    messages = [{"role": "user", "content": "When does Project Nightjar launch from Kiruna?"}]
    with pytest.raises(openai.NotFoundError):
        await sdk.chat.completions.create(
            model="m", messages=messages, extra_body={"index_name": "secret"}
        )  # type: ignore[arg-type]
    await sdk.chat.completions.create(
        model="m", messages=messages, extra_body={"index_name": "all"}
    )  # type: ignore[arg-type]
    await sdk.close()


async def test_deleted_documents_and_chats_are_gone_everywhere(
    client: httpx.AsyncClient, alice: dict[str, Any], fresh_llm: ScriptedLLM
) -> None:
    headers = alice["headers"]
    assert (
        await client.delete(f"/api/v1/documents/{alice['document']}", headers=headers)
    ).status_code == 204
    assert (
        await client.get(f"/api/v1/documents/{alice['document']}/file", headers=headers)
    ).status_code == 404
    assert (await ask(client, headers, "x", document_ids=[alice["document"]])).status_code == 404
    # Retrieval over "all" and over the chat no longer finds it.
    answer = (
        await ask(client, headers, "When does Project Nightjar launch?", chat_id=alice["chat"])
    ).json()
    assert answer["assistant_message"]["sources"] is None
    assert answer["assistant_message"]["meta"]["documents_searched"] == 0
    assert (
        await client.delete(f"/api/v1/chats/{alice['chat']}", headers=headers)
    ).status_code == 204
    for url in (f"/api/v1/chats/{alice['chat']}", f"/api/v1/chats/{alice['chat']}/messages"):
        assert (await client.get(url, headers=headers)).status_code == 404
    assert all(
        c["id"] != alice["chat"]
        for c in (await client.get("/api/v1/chats", headers=headers)).json()["items"]
    )


async def test_api_keys_reach_only_their_owners_data(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: dict[str, Any],
    bob: dict[str, str],
    fresh_llm: ScriptedLLM,
) -> None:
    alice_key = await client.post(
        "/api/v1/api-keys", headers=alice["headers"], json={"name": "a", "scopes": ["read"]}
    )
    bob_key = await client.post(
        "/api/v1/api-keys",
        headers=bob,
        json={"name": "b", "scopes": ["read", "chat", "upload"]},
    )
    bob_secret = {"Authorization": f"Bearer {bob_key.json()['secret']}"}
    # Bob can neither see nor revoke Alice's key; his key opens none of her doors.
    assert (await client.get("/api/v1/api-keys", headers=bob)).json()[0]["name"] == "b"
    revoke = await client.delete(f"/api/v1/api-keys/{alice_key.json()['id']}", headers=bob)
    assert revoke.status_code == 404
    for path in (
        f"/api/v1/documents/{alice['document']}",
        f"/api/v1/documents/{alice['document']}/file",
        f"/api/v1/chats/{alice['chat']}",
    ):
        assert (await client.get(path, headers=bob_secret)).status_code == 404, path
    question = "When does Project Nightjar launch from Kiruna?"
    asked = await ask(client, bob_secret, question, document_ids=[alice["document"]])
    assert asked.status_code == 404
    answer = (await ask(client, bob_secret, question)).json()["assistant_message"]
    assert answer["sources"] is None
    sdk = sdk_for(app, bob_key.json()["secret"])
    try:
        await sdk.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": question}],
            extra_body={"index_name": "all"},
        )
    finally:
        await sdk.close()
    # Administration is not reachable by a user, with a login or a key.
    for path in ("/api/v1/admin/users", "/api/v1/admin/audit"):
        assert (await client.get(path, headers=bob)).status_code == 403
        assert (await client.get(path, headers=bob_secret)).status_code == 403


async def test_collections_are_404_to_non_members_on_every_path(
    client: httpx.AsyncClient, alice: dict[str, Any], bob: dict[str, str], fresh_llm: ScriptedLLM
) -> None:
    headers = alice["headers"]
    collection = (
        await client.post("/api/v1/collections", headers=headers, json={"name": "Nightjar"})
    ).json()["id"]
    await client.put(
        f"/api/v1/collections/{collection}/documents/{alice['document']}", headers=headers
    )
    bob_chat = (await client.post("/api/v1/chats", headers=bob, json={})).json()["id"]
    base = f"/api/v1/collections/{collection}"
    attempts = [
        ("GET", base, None),
        ("PATCH", base, {"name": "mine"}),
        ("DELETE", base, None),
        ("GET", f"{base}/documents", None),
        ("PUT", f"{base}/documents/{alice['document']}", None),
        ("DELETE", f"{base}/documents/{alice['document']}", None),
        ("GET", f"{base}/members", None),
        ("POST", f"{base}/members", {"email": "bob@example.com"}),
        ("POST", "/api/v1/chats", {"collection_ids": [collection]}),
        ("PUT", f"/api/v1/chats/{bob_chat}/collections/{collection}", None),
    ]
    for method, path, body in attempts:
        response = await client.request(method, path, headers=bob, json=body)
        assert response.status_code == 404, (method, path, response.text)
    question = "When does Project Nightjar launch from Kiruna?"
    assert (await ask(client, bob, question, collection_ids=[collection])).status_code == 404
    listed = (await client.get("/api/v1/collections", headers=bob)).json()["items"]
    assert [item["name"] for item in listed] == ["Everyone"]
    # Alice's own collection still works for her.
    assert (await client.get(base, headers=headers)).json()["document_count"] == 1
