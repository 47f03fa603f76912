"""The audit log names people and things in words (issue 40): a removed collection member by
address (it showed raw ids), a deleted chat with its size and age (it showed nothing), a
document taken out of a collection by its file name (issue 67: it showed only its id)."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from tests.api.test_collections import email_of, invite
from tests.api.test_user_admin import audit
from tests.support.documents import upload
from tests.support.users import admin_headers, auth_headers


async def test_a_removed_member_and_a_changed_role_are_named_by_address(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    olga, vera = await auth_headers(client), await auth_headers(client)
    vera_email = await email_of(client, vera)
    collection = (
        await client.post("/api/v1/collections", headers=olga, json={"name": "Atlas"})
    ).json()["id"]
    members = (await invite(client, olga, collection, vera, "viewer")).json()
    member_id = next(m["id"] for m in members if m["email"] == vera_email)
    changed = await client.patch(
        f"/api/v1/collections/{collection}/members/{member_id}",
        headers=olga,
        json={"role": "editor"},
    )
    assert changed.status_code < 300, changed.text
    removed = await client.delete(
        f"/api/v1/collections/{collection}/members/{member_id}", headers=olga
    )
    assert removed.status_code == 204

    [change] = [
        e
        for e in await audit(client, admin, action="collection.member_changed")
        if e["detail"].get("collection") == "Atlas"
    ]
    assert change["detail"]["member"] == vera_email and change["detail"]["after"] == "editor"
    [removal] = [
        e
        for e in await audit(client, admin, action="collection.member_removed")
        if e["detail"].get("collection") == "Atlas"
    ]
    assert removal["detail"] == {"collection": "Atlas", "member": vera_email, "role": "editor"}


async def test_a_deleted_chat_is_described_by_its_size_and_age_not_its_words(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    user = await auth_headers(client)
    chat = (
        await client.post("/api/v1/chats", headers=user, json={"title": "Private matter"})
    ).json()
    assert (await client.delete(f"/api/v1/chats/{chat['id']}", headers=user)).status_code == 204
    [entry] = [
        e for e in await audit(client, admin, action="chat.deleted") if e["target_id"] == chat["id"]
    ]
    assert entry["detail"] == {"messages": 0, "created": chat["created_at"][:10]}
    assert "Private matter" not in str(entry)


async def test_a_document_taken_out_of_a_collection_is_named_by_its_file(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    olga = await auth_headers(client)
    collection = (
        await client.post("/api/v1/collections", headers=olga, json={"name": "Harbour"})
    ).json()["id"]
    document = (await upload(client, olga, "tide-tables.md", b"High tide at six.")).json()["id"]
    path = f"/api/v1/collections/{collection}/documents/{document}"
    assert (await client.put(path, headers=olga)).status_code < 300
    assert (await client.delete(path, headers=olga)).status_code == 204

    [removal] = [
        e
        for e in await audit(client, admin, action="collection.document_removed")
        if e["detail"].get("collection") == "Harbour"
    ]
    assert removal["detail"] == {
        "collection": "Harbour",
        "document_id": document,
        "filename": "tide-tables.md",
    }
