"""Deleting an account: a person's own request, an administrator's decision about what others
rely on, and what is left afterwards (nothing of the person's but audit entries that no longer
name them)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import String, cast, func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.documents.models import Document
from docchat.events.models import Event
from docchat.main.cli import main
from docchat.main.components import Components
from docchat.membership.models import Collection
from docchat.retrieval.models import DocumentChunk
from docchat.users.models import User
from tests.api.test_collections import email_of, invite
from tests.support.chat import ask
from tests.support.documents import upload_and_process, vector_ref
from tests.support.llm_server import ScriptedLLM
from tests.support.users import PASSWORD, admin_headers, auth_headers, login, unique_email

FERRY = b"The island ferry leaves the harbour at nine and returns at six."
DIARY = b"My private diary: the blue kite is hidden in the attic."
TIDES = b"High tide at the north pier comes at eleven fifteen on Sundays."


async def _me(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await client.get("/api/v1/users/me", headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _stored_key(session: AsyncSession, document_id: str) -> str:
    return str(
        (
            await session.execute(
                select(Document.storage_key).where(Document.id == uuid.UUID(document_id))
            )
        ).scalar_one()
    )


async def _mentions(session: AsyncSession, email: str) -> int:
    """Audit entries that still name the address anywhere."""
    statement = select(func.count(AuditEntry.id)).where(
        (func.lower(AuditEntry.actor_email) == email.lower())
        | cast(AuditEntry.detail, String).ilike(f"%{email}%")
    )
    return int((await session.execute(statement)).scalar_one())


async def _ask_to_delete(
    client: httpx.AsyncClient, headers: dict[str, str], email: str
) -> httpx.Response:
    body = {"confirm_email": email, "password": PASSWORD}
    return await client.post("/api/v1/users/me/deletion", headers=headers, json=body)


async def _gone_everywhere(
    session: AsyncSession, components: Components, document: dict[str, Any], key: str
) -> None:
    document_id = uuid.UUID(document["id"])
    assert await session.get(Document, document_id) is None
    chunks = select(func.count()).where(DocumentChunk.document_id == document_id)
    assert (await session.execute(chunks)).scalar_one() == 0
    assert await components.vector_index.count(vector_ref(document)) == 0
    assert not await components.storage.exists(key)


async def test_a_person_whose_things_no_one_else_reads_is_deleted_at_once(
    client: httpx.AsyncClient,
    session: AsyncSession,
    components: Components,
    fresh_llm: ScriptedLLM,
) -> None:
    olga = await auth_headers(client)
    me = await _me(client, olga)
    email = me["email"]
    document = await upload_and_process(client, components, olga, "diary.txt", DIARY)
    key = await _stored_key(session, document["id"])
    assert await components.vector_index.count(vector_ref(document)) > 0
    fresh_llm.default.content = "In the attic [1]."
    answered = await ask(client, olga, "Where is the blue kite hidden?")
    assert answered.json()["assistant_message"]["sources"], answered.text
    created = await client.post("/api/v1/collections", headers=olga, json={"name": "Mine"})
    collection_id = uuid.UUID(created.json()["id"])
    earlier = await client.post("/api/v1/collections", headers=olga, json={"name": "Old"})
    earlier_id = uuid.UUID(earlier.json()["id"])
    assert (await client.delete(f"/api/v1/collections/{earlier_id}", headers=olga)).is_success
    made = await client.post(
        "/api/v1/api-keys", headers=olga, json={"name": "phone", "scopes": ["read"]}
    )
    secret = made.json()["secret"]

    plan = (await client.get("/api/v1/users/me/deletion", headers=olga)).json()
    assert (plan["documents"], plan["chats"], plan["api_keys"]) == (1, 1, 1)
    assert plan["collections_owned"] == 1 and plan["relied_on_documents"] == []

    confirm = {"confirm_email": email, "password": PASSWORD}
    url = "/api/v1/users/me/deletion"
    wrong_email = await client.post(url, headers=olga, json={**confirm, "confirm_email": "x@y.z"})
    assert wrong_email.status_code == 422 and "email" in wrong_email.json()["detail"]
    wrong_password = await client.post(url, headers=olga, json={**confirm, "password": "nope"})
    assert wrong_password.status_code == 403
    by_key = await client.post(url, headers={"Authorization": f"Bearer {secret}"}, json=confirm)
    assert by_key.status_code == 403, "an API key cannot delete the account it belongs to"

    deleted = await client.post(url, headers=olga, json={**confirm, "confirm_email": email.upper()})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["status"] == "deleted"

    assert (await client.get("/api/v1/users/me", headers=olga)).status_code == 401
    key_use = await client.get("/api/v1/documents", headers={"Authorization": f"Bearer {secret}"})
    assert key_use.status_code == 401
    await _gone_everywhere(session, components, document, key)
    assert await session.get(Collection, collection_id) is None
    assert await session.get(Collection, earlier_id) is None, "deleted before, gone now"
    assert await session.get(User, uuid.UUID(me["id"])) is None
    # The audit log keeps what happened, under a name that is no one's (until someone types
    # the address at the login form again).
    assert await _mentions(session, email) == 0
    assert (await login(client, email)).status_code == 401
    # The usage figures keep the question's count, not its words.
    payloads = await session.execute(
        select(Event.payload).where(Event.type == "query_submitted", Event.user_id.is_(None))
    )
    assert all("blue kite" not in str(payload) for payload in payloads.scalars())
    kept = await session.execute(
        select(AuditEntry.action, AuditEntry.actor_email, AuditEntry.address).where(
            AuditEntry.actor_id == uuid.UUID(me["id"])
        )
    )
    rows = kept.all()
    assert {"auth.login", "api_key.created"} <= {row.action for row in rows}
    assert {row.actor_email for row in rows} == {f"deleted-user-{uuid.UUID(me['id']).hex[:12]}"}
    assert {row.address for row in rows} == {None}
    # The address is free again.
    again = await client.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
    assert again.status_code == 201, again.text


async def _olga_shares_with_vera(
    client: httpx.AsyncClient, components: Components
) -> tuple[dict[str, str], dict[str, str], dict[str, Any], dict[str, Any], str]:
    """Olga owns "Harbour" (Vera reads it) holding the ferry notes, and a private diary."""
    olga, vera = await auth_headers(client), await auth_headers(client)
    shared = await upload_and_process(client, components, olga, "ferry.txt", FERRY)
    private = await upload_and_process(client, components, olga, "diary.txt", DIARY)
    created = await client.post("/api/v1/collections", headers=olga, json={"name": "Harbour"})
    collection = created.json()["id"]
    added = await client.put(
        f"/api/v1/collections/{collection}/documents/{shared['id']}", headers=olga
    )
    assert added.status_code < 300, added.text
    await invite(client, olga, collection, vera)
    return olga, vera, shared, private, collection


async def test_what_others_read_waits_for_an_administrator_who_hands_it_over(
    client: httpx.AsyncClient,
    session: AsyncSession,
    components: Components,
    fresh_llm: ScriptedLLM,
) -> None:
    olga, vera, shared, private, collection = await _olga_shares_with_vera(client, components)
    olga_me, vera_me = await _me(client, olga), await _me(client, vera)
    private_key = await _stored_key(session, private["id"])
    admin = await admin_headers(client, session)

    asked = await _ask_to_delete(client, olga, olga_me["email"])
    assert asked.status_code == 202, asked.text
    plan = asked.json()["plan"]
    assert [(d["filename"], d["collections"]) for d in plan["relied_on_documents"]] == [
        ("ferry.txt", ["Harbour"])
    ]
    assert [(c["name"], c["members"]) for c in plan["relied_on_collections"]] == [("Harbour", 1)]
    # Nothing is gone yet: the account works, and the request can be seen and taken back.
    assert (await client.get(f"/api/v1/documents/{private['id']}", headers=olga)).status_code == 200
    waiting = await client.get(
        "/api/v1/admin/users", headers=admin, params={"deletion_requested": True, "limit": 100}
    )
    assert olga_me["id"] in [user["id"] for user in waiting.json()["items"]]
    assert (await client.delete("/api/v1/users/me/deletion", headers=olga)).status_code == 204
    assert (await client.delete("/api/v1/users/me/deletion", headers=olga)).status_code == 404
    assert (await client.get("/api/v1/users/me/deletion", headers=olga)).json()[
        "deletion_requested_at"
    ] is None

    url = f"/api/v1/admin/users/{olga_me['id']}"
    undecided = await client.delete(url, headers=admin)
    assert undecided.status_code == 409
    assert "1 document(s) and 1 collection(s)" in undecided.json()["detail"]
    to_nobody = await client.delete(
        url, headers=admin, params={"others_documents": "transfer", "transfer_to": olga_me["id"]}
    )
    assert to_nobody.status_code == 422
    handed = await client.delete(
        url, headers=admin, params={"others_documents": "transfer", "transfer_to": vera_me["id"]}
    )
    assert handed.status_code == 204, handed.text

    # Vera owns the ferry notes now, answers still cite them, and she runs the collection.
    moved = await client.get(f"/api/v1/documents/{shared['id']}", headers=vera)
    assert moved.status_code == 200 and moved.json()["owner_id"] == vera_me["id"]
    assert await components.vector_index.count(vector_ref(moved.json())) > 0
    assert await components.vector_index.count(vector_ref(shared)) == 0
    fresh_llm.default.content = "At nine [1]."
    answered = await ask(client, vera, "When does the island ferry leave the harbour?")
    sources = answered.json()["assistant_message"]["sources"]
    assert [source["document_name"] for source in sources][:1] == ["ferry.txt"], answered.text
    renamed = await client.patch(
        f"/api/v1/collections/{collection}", headers=vera, json={"name": "Harbour (Vera)"}
    )
    assert renamed.status_code == 200, renamed.text
    # Everything else of Olga's is gone, and the log no longer names her.
    await _gone_everywhere(session, components, private, private_key)
    assert await _mentions(session, olga_me["email"]) == 0
    entry = (
        await client.get("/api/v1/admin/audit", headers=admin, params={"action": "user.deleted"})
    ).json()["items"][0]
    assert entry["target_id"] == olga_me["id"]
    assert entry["detail"]["documents_transferred"] == 1
    assert entry["detail"]["transferred_to"] == vera_me["id"]


async def test_an_administrator_may_delete_what_others_read_too(
    client: httpx.AsyncClient, session: AsyncSession, components: Components
) -> None:
    olga, vera, shared, _, collection = await _olga_shares_with_vera(client, components)
    tides = await upload_and_process(client, components, vera, "tides.txt", TIDES)
    await client.put(f"/api/v1/collections/{collection}/documents/{tides['id']}", headers=vera)
    shared_key = await _stored_key(session, shared["id"])
    olga_id = (await _me(client, olga))["id"]
    admin = await admin_headers(client, session)

    plan = await client.get(f"/api/v1/admin/users/{olga_id}/deletion", headers=admin)
    assert [d["filename"] for d in plan.json()["relied_on_documents"]] == ["ferry.txt"]
    removed = await client.delete(
        f"/api/v1/admin/users/{olga_id}", headers=admin, params={"others_documents": "delete"}
    )
    assert removed.status_code == 204, removed.text

    await _gone_everywhere(session, components, shared, shared_key)
    assert (await client.get(f"/api/v1/collections/{collection}", headers=vera)).status_code == 404
    # Vera's own document, which was in Olga's collection, stays hers.
    assert (await client.get(f"/api/v1/documents/{tides['id']}", headers=vera)).status_code == 200
    assert await components.vector_index.count(vector_ref(tides)) > 0
    again = await client.get(f"/api/v1/admin/users/{olga_id}", headers=admin)
    assert again.status_code == 404


async def test_the_last_administrator_and_a_shared_file_are_kept(
    client: httpx.AsyncClient, session: AsyncSession, components: Components
) -> None:
    olga, vera = await auth_headers(client), await auth_headers(client)
    mine = await upload_and_process(client, components, olga, "same.txt", TIDES)
    theirs = await upload_and_process(client, components, vera, "same.txt", TIDES)
    key = await _stored_key(session, mine["id"])
    assert key == await _stored_key(session, theirs["id"]), "identical uploads share a file"
    olga_me = await _me(client, olga)
    deleted = await _ask_to_delete(client, olga, olga_me["email"])
    assert deleted.status_code == 200, deleted.text
    assert await components.storage.exists(key), "Vera's document still uses the file"
    download = await client.get(f"/api/v1/documents/{theirs['id']}/file", headers=vera)
    assert download.status_code == 200 and download.content == TIDES

    await session.execute(
        User.__table__.update().where(User.role == "admin").values(is_active=False)
    )
    admin = await admin_headers(client, session)
    admin_id = (await _me(client, admin))["id"]
    alone = await _ask_to_delete(client, admin, (await _me(client, admin))["email"])
    assert alone.status_code == 409 and "last active administrator" in alone.json()["detail"]
    assert (await client.get(f"/api/v1/admin/users/{admin_id}", headers=admin)).status_code == 200


@pytest.mark.parametrize("others", ["transfer", "nonsense"])
async def test_bad_choices_are_refused_with_what_to_do(
    client: httpx.AsyncClient, session: AsyncSession, others: str
) -> None:
    admin = await admin_headers(client, session)
    vera = await auth_headers(client)
    vera_id = (await _me(client, vera))["id"]
    response = await client.delete(
        f"/api/v1/admin/users/{vera_id}", headers=admin, params={"others_documents": others}
    )
    assert response.status_code == 422
    if others == "transfer":
        assert "transfer_to" in response.json()["detail"]
    ghost = await client.delete(f"/api/v1/admin/users/{uuid.uuid4()}", headers=admin)
    assert ghost.status_code == 404
    assert await email_of(client, vera)


def test_command_line_deletion(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    database_url: str,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    from docchat.config import get_settings

    get_settings.cache_clear()
    email = unique_email("leaver")
    try:
        main(["users", "create", email])
        capsys.readouterr()
        main(["users", "delete", email])
        assert f"deleted {email}: 0 document(s)" in capsys.readouterr().out
        with pytest.raises(SystemExit, match="No user"):
            main(["users", "delete", email])
    finally:
        get_settings.cache_clear()


async def test_the_audit_log_lets_a_deletion_replace_names_and_nothing_else(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    await auth_headers(client)  # an entry to try to change
    for statement in (
        "UPDATE audit_log SET action = 'x'",
        "UPDATE audit_log SET actor_id = gen_random_uuid()",
        "UPDATE audit_log SET created_at = now() - interval '1 year'",
        "UPDATE audit_log SET actor_email = 'someone-else@example.com'",
        "UPDATE audit_log SET address = '10.9.8.7'",
        "DELETE FROM audit_log",
    ):
        async with session.begin_nested() as attempt:
            await session.execute(text("SELECT set_config('docchat.audit_erasure', 'on', true)"))
            with pytest.raises(DBAPIError, match="append-only"):
                await session.execute(text(statement))
            await attempt.rollback()
    with pytest.raises(DBAPIError, match="append-only"):  # the name too, outside a deletion
        async with session.begin_nested():
            await session.execute(text("UPDATE audit_log SET actor_email = 'someone else'"))
