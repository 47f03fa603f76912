"""A chat shared read-only by link inside the installation (issue 40): a colleague with the
link reads the answers, and each source only if they may read its document themselves; what
is asked after sharing stays private until the link is updated; the link can be turned off."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import admin_headers, auth_headers

PRIVATE = "Olga's salary review: the bonus pool for 2027 is 40,000 euros."
SHARED = "The Orion handbook: deployments happen on Thursdays after the 14:00 review."


async def test_a_shared_chat_shows_its_answers_and_only_the_sources_the_reader_may_read(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    session: AsyncSession,
) -> None:
    olga = await auth_headers(client)
    vera = await auth_headers(client)
    private = await upload_and_process(client, components, olga, "salary.md", PRIVATE.encode())
    handbook = await upload_and_process(client, components, olga, "handbook.md", SHARED.encode())
    collection = (
        await client.post("/api/v1/collections", headers=olga, json={"name": "Orion"})
    ).json()
    await client.put(
        f"/api/v1/collections/{collection['id']}/documents/{handbook['id']}", headers=olga
    )
    vera_email = (await client.get("/api/v1/users/me", headers=vera)).json()["email"]
    await client.post(
        f"/api/v1/collections/{collection['id']}/members",
        headers=olga,
        json={"email": vera_email, "role": "viewer"},
    )
    await client.post(f"/api/v1/collections/{collection['id']}/invitation/accept", headers=vera)

    # Each fact cites both passages: the one that does not bear it out loses its marker,
    # whichever order the search gave them.
    fresh_llm.script("Deployments are on Thursdays [1][2]. The bonus pool is 40,000 euros [1][2].")
    asked = await ask(
        client,
        olga,
        "When are deployments, and how big is the bonus pool?",
        document_ids=[handbook["id"], private["id"]],
    )
    assert asked.status_code == 200, asked.text
    chat_id = asked.json()["chat_id"]
    cited = [source["document_id"] for source in asked.json()["assistant_message"]["sources"]]
    assert set(cited) == {handbook["id"], private["id"]}

    # Not shared yet: the link's id is unknown to everyone.
    assert (await client.get(f"/api/v1/chats/{chat_id}", headers=olga)).json()["share_id"] is None
    shared = await client.put(f"/api/v1/chats/{chat_id}/share", headers=olga)
    assert shared.status_code == 200, shared.text
    share_id = shared.json()["share_id"]
    assert share_id and shared.json()["shared_at"]

    # Vera, with the link: the title, who shared it, the two messages.
    about = await client.get(f"/api/v1/shared-chats/{share_id}", headers=vera)
    assert about.status_code == 200, about.text
    assert (
        about.json()["title"].startswith("When are deployments") and about.json()["yours"] is False
    )
    messages = (await client.get(f"/api/v1/shared-chats/{share_id}/messages", headers=vera)).json()
    assert [m["role"] for m in messages["items"]] == ["user", "assistant"]
    sources = messages["items"][1]["sources"]
    # The handbook (shared with her through the collection) is there; the salary review is not,
    # not even its name: its place stays, so the [n] markers still line up.
    assert len(sources) == 2
    visible = [source for source in sources if source is not None]
    assert [source["document_id"] for source in visible] == [handbook["id"]]
    assert "salary.md" not in str(sources)
    # The owner sees every source.
    mine = (await client.get(f"/api/v1/shared-chats/{share_id}/messages", headers=olga)).json()
    assert None not in mine["items"][1]["sources"]

    # Asked after sharing: private until the link is brought up to date (same link).
    fresh_llm.script("Thursdays.")
    await ask(client, olga, "Remind me of the day?", chat_id=chat_id)
    listed = (await client.get(f"/api/v1/shared-chats/{share_id}/messages", headers=vera)).json()
    assert listed["total"] == 2
    again = await client.put(f"/api/v1/chats/{chat_id}/share", headers=olga)
    assert again.json()["share_id"] == share_id
    listed = (await client.get(f"/api/v1/shared-chats/{share_id}/messages", headers=vera)).json()
    assert listed["total"] == 4

    # Only with a session; not the owner's controls: Vera cannot change or unshare the chat.
    assert (await client.get(f"/api/v1/shared-chats/{share_id}")).status_code == 401
    assert (await client.delete(f"/api/v1/chats/{chat_id}/share", headers=vera)).status_code == 404
    assert (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=vera)).status_code == 404

    # Turned off: the link leads nowhere, with a reason; sharing again makes a new link.
    assert (await client.delete(f"/api/v1/chats/{chat_id}/share", headers=olga)).status_code == 204
    gone = await client.get(f"/api/v1/shared-chats/{share_id}", headers=vera)
    assert gone.status_code == 404 and "turned off" in gone.json()["detail"]
    renewed = (await client.put(f"/api/v1/chats/{chat_id}/share", headers=olga)).json()["share_id"]
    assert renewed != share_id
    # A deleted chat's link leads nowhere either.
    await client.delete(f"/api/v1/chats/{chat_id}", headers=olga)
    assert (await client.get(f"/api/v1/shared-chats/{renewed}", headers=vera)).status_code == 404

    # The audit log says who shared and unshared, never the chat's words.
    admin = await admin_headers(client, session)
    log = (await client.get("/api/v1/admin/audit", headers=admin, params={"limit": 50})).json()
    actions = [entry["action"] for entry in log["items"]]
    assert "chat.shared" in actions and "chat.unshared" in actions
    assert "bonus" not in str(log)


async def test_a_deactivated_account_s_links_lead_nowhere_until_it_is_active_again(
    client: httpx.AsyncClient, session: AsyncSession, fresh_llm: ScriptedLLM
) -> None:
    """A deactivated account's API keys and sessions stopped working; its chat links did not."""
    owner, reader = await auth_headers(client), await auth_headers(client)
    admin = await admin_headers(client, session)
    fresh_llm.script("Hello.")
    chat_id = (await ask(client, owner, "Hello there")).json()["chat_id"]
    share_id = (await client.put(f"/api/v1/chats/{chat_id}/share", headers=owner)).json()[
        "share_id"
    ]
    owner_id = (await client.get("/api/v1/users/me", headers=owner)).json()["id"]
    link = f"/api/v1/shared-chats/{share_id}"
    assert (await client.get(link, headers=reader)).status_code == 200

    await client.patch(f"/api/v1/admin/users/{owner_id}", headers=admin, json={"is_active": False})
    assert (await client.get(link, headers=reader)).status_code == 404
    assert (await client.get(f"{link}/messages", headers=reader)).status_code == 404

    await client.patch(f"/api/v1/admin/users/{owner_id}", headers=admin, json={"is_active": True})
    assert (await client.get(link, headers=reader)).status_code == 200
