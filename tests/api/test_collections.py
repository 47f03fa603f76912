"""Collections shared with people and groups: roles, scoping of questions, and revocation that
takes effect at the very next question (checked in what the model receives)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import scopes
from docchat.main.components import Components
from docchat.membership.models import EVERYONE_ID
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import admin_headers, auth_headers

HANDBOOK = "The Orion team handbook: deployments happen on Thursdays after the 14:00 review."
QUESTION = "When do deployments of the Orion team happen?"
MARKER = "14:00 review"


@pytest.fixture(autouse=True, params=["listed", "wide"])
def scope_shape(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: scopes listed (few documents, as here) and as a condition (as a
    library of thousands would be), so that sharing and revocation hold on both paths."""
    if request.param == "wide":
        monkeypatch.setattr(scopes, "LISTED_UP_TO", 0)
        monkeypatch.setattr(scopes, "_everyones", {})
    return str(request.param)


def prompts(llm: ScriptedLLM) -> str:
    return json.dumps(llm.requests)


async def user_id(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    return str((await client.get("/api/v1/users/me", headers=headers)).json()["id"])


async def email_of(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    return str((await client.get("/api/v1/users/me", headers=headers)).json()["email"])


async def invite(
    client: httpx.AsyncClient,
    owner: dict[str, str],
    collection: str,
    member: dict[str, str],
    role: str = "viewer",
) -> httpx.Response:
    """The owner invites `member`, who accepts: from then on the collection is theirs to read."""
    invited = await client.post(
        f"/api/v1/collections/{collection}/members",
        headers=owner,
        json={"email": await email_of(client, member), "role": role},
    )
    assert invited.status_code == 201, invited.text
    accepted = await client.post(
        f"/api/v1/collections/{collection}/invitation/accept", headers=member
    )
    assert accepted.status_code == 200, accepted.text
    return invited


async def remove_viewer(client: httpx.AsyncClient, owner: dict[str, str], collection: str) -> None:
    """The collection's owner removes its (one) viewer."""
    members = (await client.get(f"/api/v1/collections/{collection}/members", headers=owner)).json()
    viewer = next(m for m in members if m["role"] == "viewer")
    removed = await client.delete(
        f"/api/v1/collections/{collection}/members/{viewer['id']}", headers=owner
    )
    assert removed.status_code == 204


@pytest.fixture
async def team(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> dict[str, Any]:
    """Olga owns a collection holding her handbook; Vera is a colleague not yet in it."""
    olga = await auth_headers(client)
    vera = await auth_headers(client)
    document = await upload_and_process(client, components, olga, "handbook.md", HANDBOOK.encode())
    created = await client.post("/api/v1/collections", headers=olga, json={"name": "Orion"})
    assert created.status_code == 201, created.text
    collection = created.json()
    assert collection["role"] == "owner" and collection["document_count"] == 0
    added = await client.put(
        f"/api/v1/collections/{collection['id']}/documents/{document['id']}", headers=olga
    )
    assert added.status_code == 204
    fresh_llm.reset()
    return {"olga": olga, "vera": vera, "collection": collection["id"], "document": document["id"]}


async def test_a_member_reads_and_asks_until_removed(
    client: httpx.AsyncClient, team: dict[str, Any], fresh_llm: ScriptedLLM
) -> None:
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    assert (await client.get(f"/api/v1/collections/{collection}", headers=vera)).status_code == 404
    assert (await ask(client, vera, QUESTION)).json()["assistant_message"]["sources"] is None
    assert MARKER not in prompts(fresh_llm)

    shared = await client.post(
        f"/api/v1/collections/{collection}/members",
        headers=olga,
        json={"email": await email_of(client, vera), "role": "viewer"},
    )
    assert shared.status_code == 201, shared.text
    # Invited, not yet in: nothing of the collection reaches her until she accepts.
    waiting = (await client.get("/api/v1/collections/invitations", headers=vera)).json()
    assert [(i["collection_name"], i["role"]) for i in waiting] == [("Orion", "viewer")]
    assert waiting[0]["invited_by"] == await email_of(client, olga)
    assert (await client.get(f"/api/v1/collections/{collection}", headers=vera)).status_code == 404
    assert (await ask(client, vera, QUESTION)).json()["assistant_message"]["sources"] is None
    assert MARKER not in prompts(fresh_llm)
    accepted = await client.post(
        f"/api/v1/collections/{collection}/invitation/accept", headers=vera
    )
    assert accepted.status_code == 200 and accepted.json()["role"] == "viewer"
    assert (await client.get("/api/v1/collections/invitations", headers=vera)).json() == []
    listed = (await client.get("/api/v1/collections", headers=vera)).json()["items"]
    assert [c["name"] for c in listed] == ["Everyone", "Orion"]
    assert listed[1]["role"] == "viewer" and listed[1]["document_count"] == 1
    documents = (
        await client.get(f"/api/v1/collections/{collection}/documents", headers=vera)
    ).json()
    assert [d["filename"] for d in documents["items"]] == ["handbook.md"]

    fresh_llm.script("On Thursdays after the review [1].")
    answer = (await ask(client, vera, QUESTION)).json()
    assert answer["assistant_message"]["sources"][0]["document_name"] == "handbook.md"
    chat_id = answer["chat_id"]
    # A viewer may not change the collection.
    denied = await client.delete(
        f"/api/v1/collections/{collection}/documents/{team['document']}", headers=vera
    )
    assert denied.status_code == 403
    listed = (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=vera)).json()
    assert listed["items"][-1]["sources"][0]["readable"] is True

    await remove_viewer(client, olga, collection)
    # Her answer keeps its quote, and says the document can no longer be opened (the app
    # offered "Open document": a blank tab, then an error).
    listed = (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=vera)).json()
    assert listed["items"][-1]["sources"][0]["readable"] is False
    fresh_llm.reset()
    later = (await ask(client, vera, QUESTION, chat_id=chat_id)).json()
    assert later["assistant_message"]["sources"] is None
    assert MARKER not in prompts(fresh_llm), "a revoked collection's chunk reached the model"
    assert (
        await client.get(f"/api/v1/documents/{team['document']}", headers=vera)
    ).status_code == 404


async def test_groups_share_and_removing_a_document_takes_effect_at_once(
    client: httpx.AsyncClient, session: AsyncSession, team: dict[str, Any], fresh_llm: ScriptedLLM
) -> None:
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    admin = await admin_headers(client, session)
    group = await client.post("/api/v1/admin/groups", headers=admin, json={"name": "Engineering"})
    assert group.status_code == 201, group.text
    group_id = group.json()["id"]
    again = await client.post("/api/v1/admin/groups", headers=admin, json={"name": "engineering"})
    assert again.status_code == 409
    joined = await client.put(
        f"/api/v1/admin/groups/{group_id}/members/{await user_id(client, vera)}", headers=admin
    )
    assert joined.status_code == 204
    assert (await client.get("/api/v1/groups", headers=vera)).json()["items"][0][
        "member_count"
    ] == 1
    share = {"group_id": group_id, "role": "viewer"}
    outside = await client.post(
        f"/api/v1/collections/{collection}/members", headers=olga, json=share
    )
    assert outside.status_code == 403, "shared with a group she is not part of"
    await client.put(
        f"/api/v1/admin/groups/{group_id}/members/{await user_id(client, olga)}", headers=admin
    )
    shared = await client.post(
        f"/api/v1/collections/{collection}/members", headers=olga, json=share
    )
    assert shared.status_code == 201

    fresh_llm.script("Thursdays [1].")
    asked = await ask(client, vera, QUESTION, collection_ids=[collection])
    assert asked.json()["assistant_message"]["sources"], asked.text
    assert asked.json()["assistant_message"]["meta"]["scope"] == "message"

    taken_out = await client.delete(
        f"/api/v1/collections/{collection}/documents/{team['document']}", headers=olga
    )
    assert taken_out.status_code == 204
    fresh_llm.reset()
    after = await ask(client, vera, QUESTION, collection_ids=[collection])
    assert after.json()["assistant_message"]["sources"] is None
    assert MARKER not in prompts(fresh_llm)

    # Out of the group, out of the collection.
    await client.put(f"/api/v1/collections/{collection}/documents/{team['document']}", headers=olga)
    await client.delete(
        f"/api/v1/admin/groups/{group_id}/members/{await user_id(client, vera)}", headers=admin
    )
    fresh_llm.reset()
    gone = await ask(client, vera, QUESTION, collection_ids=[collection])
    assert gone.status_code == 404
    assert MARKER not in prompts(fresh_llm)


async def test_the_refusal_to_share_with_a_group_names_ways_that_work(
    client: httpx.AsyncClient, session: AsyncSession, team: dict[str, Any]
) -> None:
    """It said "ask an administrator to share with this one"; the administrator then got a 404
    on the collection (issue 67, item 10). Each way the refusal names now works."""
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    admin = await admin_headers(client, session)
    group_id = (
        await client.post("/api/v1/admin/groups", headers=admin, json={"name": "Support"})
    ).json()["id"]
    await client.put(
        f"/api/v1/admin/groups/{group_id}/members/{await user_id(client, vera)}", headers=admin
    )
    members = f"/api/v1/collections/{collection}/members"
    share = {"group_id": group_id, "role": "viewer"}
    refused = await client.post(members, headers=olga, json=share)
    assert refused.status_code == 403
    said = refused.json()["detail"]
    assert "add you to this group" in said and "add an administrator" in said, said
    # An administrator outside the collection does not see it (nor may share it: they could
    # share anyone's collection with a group of theirs and read it).
    assert (await client.post(members, headers=admin, json=share)).status_code == 404

    await invite(client, olga, collection, admin, role="owner")
    assert (await client.post(members, headers=admin, json=share)).status_code == 201
    listed = (await client.get("/api/v1/collections", headers=vera)).json()["items"]
    assert collection in [item["id"] for item in listed]


async def test_chats_linked_to_a_collection_follow_its_contents(
    client: httpx.AsyncClient, team: dict[str, Any], fresh_llm: ScriptedLLM
) -> None:
    olga, collection = team["olga"], team["collection"]
    chat = await client.post("/api/v1/chats", headers=olga, json={"collection_ids": [collection]})
    assert chat.status_code == 201 and chat.json()["collection_ids"] == [collection]
    chat_id = chat.json()["id"]
    fresh_llm.script("Thursdays [1].")
    first = (await ask(client, olga, QUESTION, chat_id=chat_id)).json()["assistant_message"]
    assert first["meta"]["scope"] == "chat" and first["sources"]
    await client.delete(
        f"/api/v1/collections/{collection}/documents/{team['document']}", headers=olga
    )
    fresh_llm.reset()
    second = (await ask(client, olga, QUESTION, chat_id=chat_id)).json()["assistant_message"]
    assert second["meta"]["scope"] == "chat" and second["sources"] is None
    assert MARKER not in prompts(fresh_llm)  # the chat's scope did not widen to "all"
    unlinked = await client.delete(
        f"/api/v1/chats/{chat_id}/collections/{collection}", headers=olga
    )
    assert unlinked.status_code == 204


async def test_a_chat_linked_to_a_collection_since_revoked_does_not_widen_to_all(
    client: httpx.AsyncClient,
    components: Components,
    team: dict[str, Any],
    fresh_llm: ScriptedLLM,
) -> None:
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    own = "Vera's own notes: deployments of the Orion team are on Mondays at 09:00."
    await upload_and_process(client, components, vera, "vera.md", own.encode())
    await invite(client, olga, collection, vera)
    chat = await client.post("/api/v1/chats", headers=vera, json={"collection_ids": [collection]})
    assert chat.status_code == 201, chat.text
    await remove_viewer(client, olga, collection)
    fresh_llm.reset()

    answer = (await ask(client, vera, QUESTION, chat_id=chat.json()["id"])).json()

    message = answer["assistant_message"]
    assert message["meta"]["scope"] == "chat" and message["sources"] is None
    sent = prompts(fresh_llm)
    assert MARKER not in sent, "a revoked collection's chunk reached the model"
    assert "Mondays at 09:00" not in sent, "the chat's scope widened to all of Vera's documents"


async def test_roles_and_owners(client: httpx.AsyncClient, team: dict[str, Any]) -> None:
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    vera_email = await email_of(client, vera)
    editor = await invite(client, olga, collection, vera, "editor")
    member_id = next(m["id"] for m in editor.json() if m["email"] == vera_email)
    twice = await client.post(
        f"/api/v1/collections/{collection}/members",
        headers=olga,
        json={"email": vera_email, "role": "viewer"},
    )
    assert twice.status_code == 409
    # An editor adds her own documents, never another's (no re-sharing), and manages no one.
    own = await client.post(
        "/api/v1/documents",
        headers=vera,
        files={"file": ("notes.txt", b"Vera's notes.", "text/plain")},
    )
    assert (
        await client.put(
            f"/api/v1/collections/{collection}/documents/{own.json()['id']}", headers=vera
        )
    ).status_code == 204
    olga_member = next(
        m["id"]
        for m in (
            await client.get(f"/api/v1/collections/{collection}/members", headers=vera)
        ).json()
        if m["role"] == "owner"
    )
    assert (
        await client.delete(f"/api/v1/collections/{collection}/members/{olga_member}", headers=vera)
    ).status_code == 403
    assert (
        await client.patch(f"/api/v1/collections/{collection}", headers=vera, json={"name": "x"})
    ).status_code == 403
    # The last owner cannot leave or step down; after handing over, she can.
    assert (
        await client.delete(f"/api/v1/collections/{collection}/members/{olga_member}", headers=olga)
    ).status_code == 409
    await client.patch(
        f"/api/v1/collections/{collection}/members/{member_id}",
        headers=olga,
        json={"role": "owner"},
    )
    left = await client.delete(
        f"/api/v1/collections/{collection}/members/{olga_member}", headers=olga
    )
    assert left.status_code == 204
    assert (await client.get(f"/api/v1/collections/{collection}", headers=olga)).status_code == 404
    assert (
        await client.delete(f"/api/v1/collections/{collection}", headers=vera)
    ).status_code == 204
    assert (await client.get(f"/api/v1/collections/{collection}", headers=vera)).status_code == 404


async def test_everyone_is_the_built_in_collection(
    client: httpx.AsyncClient, session: AsyncSession, components: Components
) -> None:
    admin = await admin_headers(client, session)
    user = await auth_headers(client)
    everyone = (await client.get(f"/api/v1/collections/{EVERYONE_ID}", headers=user)).json()
    assert everyone["builtin"] and everyone["role"] == "viewer"
    document = await upload_and_process(client, components, admin, "policy.md", b"Policy text.")
    assert (
        await client.put(
            f"/api/v1/collections/{EVERYONE_ID}/documents/{document['id']}", headers=admin
        )
    ).status_code == 204
    seen = await client.get(f"/api/v1/documents/{document['id']}", headers=user)
    assert seen.status_code == 200 and seen.json()["visibility"] == "shared"
    for method, path in (
        ("PATCH", f"/api/v1/collections/{EVERYONE_ID}"),
        ("DELETE", f"/api/v1/collections/{EVERYONE_ID}"),
        ("POST", f"/api/v1/collections/{EVERYONE_ID}/members"),
    ):
        response = await client.request(
            method, path, headers=admin, json={"name": "x", "email": "a@example.com"}
        )
        assert response.status_code == 403, (method, path)
    assert (
        await client.put(
            f"/api/v1/collections/{EVERYONE_ID}/documents/{document['id']}", headers=user
        )
    ).status_code == 403
    assert (
        await client.delete(
            f"/api/v1/collections/{EVERYONE_ID}/documents/{document['id']}", headers=admin
        )
    ).status_code == 204
    assert (
        await client.get(f"/api/v1/documents/{document['id']}", headers=user)
    ).status_code == 404


async def test_a_question_over_everyone_reads_what_is_shared_with_everyone_and_no_more(
    client: httpx.AsyncClient,
    session: AsyncSession,
    components: Components,
    team: dict[str, Any],
    fresh_llm: ScriptedLLM,
) -> None:
    admin = await admin_headers(client, session)
    policy = "Company policy: the Orion offices close at 18:00 on Fridays."
    shared = await upload_and_process(client, components, admin, "policy.md", policy.encode())
    put = f"/api/v1/collections/{EVERYONE_ID}/documents/{shared['id']}"
    assert (await client.put(put, headers=admin)).status_code == 204
    olga = team["olga"]

    asked = await ask(
        client,
        olga,
        "When do the Orion offices close on Fridays?",
        collection_ids=[str(EVERYONE_ID)],
    )
    assert asked.json()["assistant_message"]["meta"]["scope"] == "message"
    assert "18:00 on Fridays" in prompts(fresh_llm)
    # Her own handbook is in none of the collections asked about.
    assert MARKER not in prompts(fresh_llm)
    fresh_llm.reset()
    own = await ask(client, olga, QUESTION, collection_ids=[team["collection"]])
    assert MARKER in prompts(fresh_llm) and "18:00 on Fridays" not in prompts(fresh_llm)
    assert own.json()["assistant_message"]["meta"]["documents_searched"] == 1


async def test_openai_clients_name_a_collection_as_their_index(
    app: FastAPI, client: httpx.AsyncClient, team: dict[str, Any], fresh_llm: ScriptedLLM
) -> None:
    olga, vera, collection = team["olga"], team["vera"], team["collection"]
    await invite(client, olga, collection, vera)
    key = await client.post(
        "/api/v1/api-keys", headers=vera, json={"name": "sdk", "scopes": ["chat"]}
    )
    sdk = sdk_for(app, key.json()["secret"])
    outsider = sdk_for(app, (await auth_headers(client))["Authorization"].removeprefix("Bearer "))
    messages: Any = [{"role": "user", "content": QUESTION}]
    try:
        fresh_llm.script("Thursdays [1].")
        completion = await sdk.chat.completions.create(
            model="m", messages=messages, extra_body={"index_name": "orion"}
        )
        assert completion.model_extra and completion.model_extra["sources"]
        assert MARKER in prompts(fresh_llm)
        fresh_llm.reset()
        with pytest.raises(openai.NotFoundError):
            await outsider.chat.completions.create(
                model="m", messages=messages, extra_body={"index_name": "Orion"}
            )
        assert MARKER not in prompts(fresh_llm)
    finally:
        await sdk.close()
        await outsider.close()
