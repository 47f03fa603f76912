"""A person downloads everything docchat holds of theirs, as one zip file."""

from __future__ import annotations

import io
import json
import zipfile

import httpx

from docchat.main.components import Components
from tests.api.test_collections import invite
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

NOTE = b"The island ferry leaves the harbour at nine and returns at six."


async def test_everything_of_a_person_in_one_zip(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    olga = await auth_headers(client)
    vera = await auth_headers(client)
    document = await upload_and_process(client, components, olga, "ferry notes.txt", NOTE)
    fresh_llm.default.content = "It leaves at nine [1]."
    answer = await ask(client, olga, "When does the island ferry leave the harbour?")
    assert answer.json()["assistant_message"]["sources"], answer.text
    chat_id = answer.json()["chat_id"]
    created = await client.post("/api/v1/collections", headers=olga, json={"name": "Harbour"})
    collection = created.json()["id"]
    await client.put(f"/api/v1/collections/{collection}/documents/{document['id']}", headers=olga)
    await invite(client, olga, collection, vera)
    key = await client.post(
        "/api/v1/api-keys", headers=olga, json={"name": "phone", "scopes": ["read"]}
    )
    secret = key.json()["secret"]
    # Vera's own things are not in Olga's archive.
    await upload_and_process(client, components, vera, "vera.txt", b"Vera keeps bees.")

    response = await client.get("/api/v1/users/me/export", headers=olga)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert "attachment" in response.headers["content-disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = set(archive.namelist())

    account = json.loads(archive.read("account.json"))
    me = (await client.get("/api/v1/users/me", headers=olga)).json()
    assert account["email"] == me["email"]
    assert [k["name"] for k in account["api_keys"]] == ["phone"]
    assert secret not in archive.read("account.json").decode()

    documents = json.loads(archive.read("documents.json"))
    assert [d["filename"] for d in documents] == ["ferry notes.txt"]
    assert archive.read(documents[0]["file"]) == NOTE

    chat = json.loads(archive.read(f"chats/{chat_id}.json"))
    cited = chat["messages"][-1]
    assert cited["content"] == "It leaves at nine [1]." and cited["sources"]
    assert f"chats/{chat_id}.md" in names

    (owned,) = json.loads(archive.read("collections.json"))
    assert owned["name"] == "Harbour"
    assert [d["filename"] for d in owned["documents"]] == ["ferry notes.txt"]
    assert {m["role"] for m in owned["members"]} == {"owner", "viewer"}

    audit = json.loads(archive.read("audit.json"))
    assert {"collection.created", "api_key.created"} <= {entry["action"] for entry in audit}
    assert not any("vera" in name for name in names)

    # The download itself is on the record, and others cannot ask for Olga's.
    assert (await client.get("/api/v1/users/me/export")).status_code == 401
