"""The scope of a search is resolved at every question as a rule (the reader, their own and
everyone's documents, their collections, the documents chosen), never as the list of every
readable document: a small scope is listed, a wide one is a condition PostgreSQL checks on
what the indexes find. Either way, what changes it (a new document, a deletion, a new
version, a share revoked) counts at the very next question."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents import scopes, scopes_repository
from docchat.documents.models import Document, DocumentStatus, Visibility
from docchat.documents.repository import readable_by
from docchat.documents.scopes import search_scope
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from docchat.membership.models import EVERYONE_ID
from docchat.retrieval import retriever as retriever_module
from docchat.retrieval.index import DocumentScope
from docchat.retrieval.retriever import Retriever
from docchat.users.models import User
from tests.api.test_collections import invite, remove_viewer
from tests.support.documents import upload, upload_and_process
from tests.support.users import admin_headers, auth_headers


async def _signed_up(
    client: httpx.AsyncClient, session: AsyncSession
) -> tuple[dict[str, str], User]:
    """A new user's headers, and the user as the repository takes it."""
    headers = await auth_headers(client)
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    return headers, await _user(session, me["id"])


async def _user(session: AsyncSession, user_id: str) -> User:
    statement = select(User).where(User.id == uuid.UUID(user_id))
    return (await session.execute(statement)).scalar_one()


def _versions(scope: DocumentScope) -> dict[str, int]:
    return {str(document.id): document.version for document in scope}


async def _in_scope(session: AsyncSession, scope: DocumentScope) -> set[str]:
    """The documents a wide scope's condition selects."""
    assert scope.condition is not None
    statement = text(f"SELECT d.id FROM documents d WHERE {scope.condition.sql}")  # noqa: S608
    rows = await session.execute(statement, dict(scope.condition.parameters))
    return {str(row.id) for row in rows}


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scope is wide (a condition), however few documents it holds; sizes counted by
    earlier tests are forgotten."""
    monkeypatch.setattr(scopes, "LISTED_UP_TO", 0)
    monkeypatch.setattr(scopes, "_everyones", {})


async def test_a_small_scope_is_listed_and_its_changes_count_at_the_next_question(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers, user = await _signed_up(client, session)
    first = await upload_and_process(client, components, headers, "a.md", b"Alpha notes.")
    scope = await search_scope(session, user)
    assert scope.listed and _versions(scope) == {first["id"]: 1}
    assert scope.by_owner == {user.id: {uuid.UUID(first["id"]): 1}}

    second = await upload_and_process(client, components, headers, "b.md", b"Beta notes.")
    assert _versions(await search_scope(session, user)) == {first["id"]: 1, second["id"]: 1}

    replaced = await client.post(
        f"/api/v1/documents/{second['id']}/versions",
        headers=headers,
        files={"file": ("b.md", b"Beta notes, second edition.")},
    )
    assert replaced.status_code == 202, replaced.text
    await IngestionWorker(components).run_until_idle()
    assert _versions(await search_scope(session, user)) == {first["id"]: 1, second["id"]: 2}

    assert (await client.delete(f"/api/v1/documents/{first['id']}", headers=headers)).is_success
    assert _versions(await search_scope(session, user)) == {second["id"]: 2}


async def test_scopes_asked_differently_are_kept_apart(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers, user = await _signed_up(client, session)
    kept = await upload_and_process(client, components, headers, "a.md", b"Alpha notes.")
    queued = await upload(client, headers, "b.md", b"Beta notes.")  # not completed: no scope
    everything = await search_scope(session, user)
    only = await search_scope(session, user, among=[uuid.UUID(queued.json()["id"])])
    assert _versions(everything) == {kept["id"]: 1} and not only and only.size == 0
    _, other = await _signed_up(client, session)
    assert not await search_scope(session, other)


@pytest.fixture
async def library(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> dict[str, Any]:
    """A reader with a note of their own (and one still queued), a policy shared with everyone,
    a colleague's collection the reader belongs to, and a stranger's private file."""
    admin = await admin_headers(client, session)
    reader_headers = await auth_headers(client)
    colleague_headers = await auth_headers(client)
    stranger_headers = await auth_headers(client)
    note = await upload_and_process(
        client, components, reader_headers, "note.md", b"My own note about the harbour."
    )
    policy = await upload_and_process(
        client, components, admin, "policy.md", b"The travel policy: book trains, not planes."
    )
    shared = await client.put(
        f"/api/v1/collections/{EVERYONE_ID}/documents/{policy['id']}", headers=admin
    )
    assert shared.status_code == 204
    handbook = await upload_and_process(
        client,
        components,
        colleague_headers,
        "handbook.md",
        b"The Orion handbook: the lighthouse keeper rings the bell at 17:40.",
    )
    created = await client.post(
        "/api/v1/collections", headers=colleague_headers, json={"name": "Orion"}
    )
    collection = created.json()["id"]
    added = await client.put(
        f"/api/v1/collections/{collection}/documents/{handbook['id']}", headers=colleague_headers
    )
    assert added.status_code == 204
    await invite(client, colleague_headers, collection, reader_headers)
    secret = await upload_and_process(
        client,
        components,
        stranger_headers,
        "secret.md",
        b"A private lighthouse diary: the keeper rings the bell at 17:40.",
    )
    await upload(client, reader_headers, "later.md", b"Queued, not read yet.")
    me = (await client.get("/api/v1/users/me", headers=reader_headers)).json()
    return {
        "reader": reader_headers,
        "reader_id": me["id"],
        "colleague": colleague_headers,
        "collection": collection,
        "readable": {note["id"], policy["id"], handbook["id"]},
        "owners": {note["owner_id"], policy["owner_id"], handbook["owner_id"]},
        "handbook": handbook["id"],
        "secret": secret["id"],
    }


async def test_a_wide_scope_holds_exactly_what_the_reader_may_read(
    session: AsyncSession, library: dict[str, Any], wide: None
) -> None:
    reader = await _user(session, library["reader_id"])
    scope = await search_scope(session, reader)
    assert not scope.listed and scope.condition is not None
    assert await _in_scope(session, scope) == library["readable"]
    assert {str(owner) for owner in scope.owners} == library["owners"]
    assert scope.size == 3
    readable = readable_by(reader).where(Document.status == DocumentStatus.completed)
    assert {str(d.id) for d in (await session.execute(readable)).scalars()} == library["readable"]
    with pytest.raises(TypeError):
        list(scope)  # a wide scope never pretends to be the list of its documents


async def test_a_revoked_share_leaves_a_wide_scope_at_the_next_question(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    library: dict[str, Any],
    wide: None,
) -> None:
    reader = await _user(session, library["reader_id"])
    question = "When does the lighthouse keeper ring the bell?"
    found = await components.retriever.search(
        question, await search_scope(session, reader), 4, require_match=False
    )
    documents = {str(hit.chunk.document_id) for hit in found.chunks}
    assert library["handbook"] in documents and library["secret"] not in documents

    await remove_viewer(client, library["colleague"], library["collection"])
    scope = await search_scope(session, reader)
    assert await _in_scope(session, scope) == library["readable"] - {library["handbook"]}
    found = await components.retriever.search(question, scope, 4, require_match=False)
    documents = {str(hit.chunk.document_id) for hit in found.chunks}
    assert library["handbook"] not in documents and library["secret"] not in documents


async def test_a_wide_scopes_size_is_counted_again_after_a_while(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    library: dict[str, Any],
    wide: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = await _user(session, library["reader_id"])
    assert (await search_scope(session, reader)).size == 3
    # Two more notes of the reader's are read (the one queued and a new one).
    await upload_and_process(client, components, library["reader"], "more.md", b"More notes.")
    counted_again = await search_scope(session, reader)
    assert counted_again.size == 3  # reused for a while
    assert len(await _in_scope(session, counted_again)) == 5  # but searched at once
    monkeypatch.setattr(scopes, "TOTALS_TTL_SECONDS", 0.0)
    assert (await search_scope(session, reader)).size == 5


async def test_a_wide_scopes_vector_search_finds_a_shared_document_behind_private_ones(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    wide: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Someone who shares one file and keeps many closer to the question private: their
    nearest chunks are all outside the reader's scope, and the search must still find the
    shared one (asked again deeper, then filtered by the documents in scope)."""
    monkeypatch.setattr(retriever_module, "VECTOR_OVERFETCH", 1)
    monkeypatch.setattr(retriever_module, "VECTOR_DEEPEN", 1)
    admin = await admin_headers(client, session)
    for number in range(3):
        await upload(
            client,
            admin,
            f"private-{number}.md",
            f"Lighthouse keeper log {number}: the bell rings at dusk.".encode(),
        )
    await IngestionWorker(components).run_until_idle()
    shared = await upload_and_process(
        client, components, admin, "shared.md", b"Harbour notice: the ferry sails at nine."
    )
    put = await client.put(
        f"/api/v1/collections/{EVERYONE_ID}/documents/{shared['id']}", headers=admin
    )
    assert put.status_code == 204
    _, reader = await _signed_up(client, session)
    vectors = Retriever(
        components.retriever.embedder,
        components.retriever.index,
        passages=components.retriever.passages,
        similarity_floor=-1.0,
    )
    scope = await search_scope(session, reader)
    found = await vectors.search("When does the lighthouse bell ring?", scope, 1)
    assert [str(hit.chunk.document_id) for hit in found.chunks] == [shared["id"]]


def _rows_read(plan: dict[str, Any], table: str) -> float:
    """Rows the plan's nodes over `table` returned or filtered away, over all their loops."""
    read = 0.0
    if plan.get("Relation Name") == table:
        kept = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        read += kept * plan.get("Actual Loops", 1)
    return read + sum(_rows_read(child, table) for child in plan.get("Plans", []))


async def test_counting_a_readers_own_part_reads_none_of_everyones_documents(
    session: AsyncSession, library: dict[str, Any]
) -> None:
    """The rest of a scope (own, collections', chosen) is counted without reading the documents
    shared with everyone (counted once for all readers): it read through all of them, 16 ms a
    count behind 100,000, every 30 s for every reader."""
    reader = await _user(session, library["reader_id"])
    librarian = User(email=f"librarian-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
    session.add(librarian)
    await session.flush()
    shelf = [
        {
            "id": uuid.uuid4(),
            "owner_id": librarian.id,
            "visibility": Visibility.shared,
            "filename": f"page-{index}.txt",
            "content_type": "text/plain",
            "size_bytes": 1,
            "sha256": "0" * 64,
            "storage_key": "shelf",
            "status": DocumentStatus.completed,
        }
        for index in range(500)
    ]
    await session.execute(insert(Document), shelf)
    await session.execute(text("ANALYZE documents"))
    rule = scopes.ScopeRule(
        reader.id, own=True, everyone=True, collections=(uuid.UUID(library["collection"]),)
    )
    explained = text(f"EXPLAIN (ANALYZE, FORMAT JSON) {scopes_repository._RESTS_TOTALS.text}")
    [[plan]] = (await session.execute(explained, rule.parameters())).all()
    assert _rows_read(plan[0]["Plan"], "documents") < 50
    counted = (await session.execute(scopes_repository._RESTS_TOTALS, rule.parameters())).one()
    assert counted.documents == 2  # the reader's note and the colleague's handbook
