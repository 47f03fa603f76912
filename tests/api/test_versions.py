"""New versions of a document (issue 18): the file is replaced in place, the old content
answers until the new one completes, then vanishes in one step; chats keep the document."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from docchat.ingestion.claims import ClaimedJob
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from docchat.retrieval.index import Chunk, DocumentRef
from tests.support.chat import ask
from tests.support.documents import upload, upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

OLD = b"Gateway guide.\n\nThe gateway listens on port 8080 for the admin console."
NEW = b"Gateway guide, revised.\n\nThe gateway listens on port 9443 for the admin console."
QUESTION = "Which port does the gateway listen on for the admin console?"


async def _document(
    client: httpx.AsyncClient, headers: dict[str, str], document_id: str
) -> dict[str, Any]:
    response = await client.get(f"/api/v1/documents/{document_id}", headers=headers)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def _new_version(
    client: httpx.AsyncClient, headers: dict[str, str], document_id: str, name: str, body: bytes
) -> httpx.Response:
    url = f"/api/v1/documents/{document_id}/versions"
    return await upload(client, headers, name, body, url=url)


async def _what_the_model_saw(
    client: httpx.AsyncClient, headers: dict[str, str], llm: ScriptedLLM, chat_id: str
) -> str:
    llm.script("It says so [1].")
    response = await ask(client, headers, QUESTION, chat_id=chat_id)
    assert response.status_code == 200, response.text
    return llm.prompt_text()


async def test_a_new_version_replaces_the_content_in_place_and_chats_keep_it(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "gateway.txt", OLD)
    assert document["version"] == 1 and document["versioned_at"] is None
    fresh_llm.script("It says so [1].")
    first = await ask(client, headers, QUESTION, document_ids=[document["id"]])
    chat_id = first.json()["chat_id"]

    response = await _new_version(client, headers, document["id"], "gateway-v2.txt", NEW)
    assert response.status_code == 202, response.text
    pending = response.json()
    assert pending["id"] == document["id"] and pending["version"] == 1
    assert pending["status"] == "completed"  # the current content still answers
    assert pending["new_version"]["number"] == 2
    assert pending["new_version"]["status"] == "queued"
    assert pending["new_version"]["filename"] == "gateway-v2.txt"
    assert "port 8080" in await _what_the_model_saw(client, headers, fresh_llm, chat_id)

    await IngestionWorker(components).run_until_idle()
    current = await _document(client, headers, document["id"])
    assert current["version"] == 2 and current["versioned_at"] is not None
    assert current["new_version"] is None and current["status"] == "completed"
    assert current["filename"] == "gateway-v2.txt" and current["size_bytes"] == len(NEW)
    seen = await _what_the_model_saw(client, headers, fresh_llm, chat_id)
    assert (
        "port 9443" in seen and "port 8080" not in seen
    )  # the chat's link now reads the new content
    detail = (await client.get(f"/api/v1/chats/{chat_id}", headers=headers)).json()
    assert [linked["id"] for linked in detail["documents"]] == [document["id"]]

    owner = uuid.UUID(document["owner_id"])
    old_ref = DocumentRef(uuid.UUID(document["id"]), owner, 1)
    new_ref = DocumentRef(uuid.UUID(document["id"]), owner, 2)
    assert await components.vector_index.count(old_ref) == 0
    assert await components.vector_index.count(new_ref) == current["chunk_count"]
    original = await client.get(f"/api/v1/documents/{document['id']}/file", headers=headers)
    assert original.content == NEW


class _AskingWhileWriting(IngestionWorker):
    """The real worker, asking a question each time a batch of the new version's vectors is
    in the index: what a user asking at that moment would get."""

    def __init__(self, components: Components, ask_now: Any) -> None:
        super().__init__(components)
        self.ask_now = ask_now
        self.seen: list[str] = []
        self._store = self.pipeline.embed_and_store
        self.pipeline.embed_and_store = self._store_and_ask  # type: ignore[method-assign]

    async def _store_and_ask(
        self, job: ClaimedJob, batch: Sequence[Chunk], before: int, last: bool
    ) -> None:
        await self._store(job, batch, before, last)
        self.seen.append(await self.ask_now())


async def test_the_old_content_answers_until_the_new_version_completes(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "gateway.txt", OLD)
    fresh_llm.script("It says so [1].")
    chat_id = (await ask(client, headers, QUESTION, document_ids=[document["id"]])).json()[
        "chat_id"
    ]
    response = await _new_version(client, headers, document["id"], "gateway.txt", NEW)
    assert response.status_code == 202

    async def ask_now() -> str:
        return await _what_the_model_saw(client, headers, fresh_llm, chat_id)

    worker = _AskingWhileWriting(components, ask_now)
    await worker.run_until_idle()
    assert worker.seen, "the new version's vectors were written"
    for seen in worker.seen:  # new vectors in the index, not yet the document's version
        assert "port 8080" in seen and "port 9443" not in seen
    assert "port 9443" in await ask_now()


async def test_a_new_version_that_fails_leaves_the_current_one_answering(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "gateway.txt", OLD)
    broken = b"%PDF-1.7\n" + bytes(range(256)) * 20 + b"\n%%EOF"
    response = await _new_version(client, headers, document["id"], "gateway.pdf", broken)
    assert response.status_code == 202
    await IngestionWorker(components).run_until_idle()
    current = await _document(client, headers, document["id"])
    assert current["version"] == 1 and current["status"] == "completed"
    assert current["filename"] == "gateway.txt"
    assert current["new_version"]["status"] == "failed"
    assert "damaged" in current["new_version"]["error"]
    digest = hashlib.sha256(broken).hexdigest()
    assert not await components.storage.exists(f"{digest[:2]}/{digest}")  # its file is gone
    fresh_llm.script("It says so [1].")
    answered = await ask(client, headers, QUESTION, document_ids=[document["id"]])
    assert "port 8080" in fresh_llm.prompt_text()
    assert answered.json()["assistant_message"]["sources"][0]["document_id"] == document["id"]

    # A fixed file can follow: it takes the same number.
    response = await _new_version(client, headers, document["id"], "gateway.txt", NEW)
    assert response.json()["new_version"]["number"] == 2
    await IngestionWorker(components).run_until_idle()
    assert (await _document(client, headers, document["id"]))["version"] == 2


async def test_the_same_file_again_changes_nothing_and_one_version_at_a_time(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "gateway.txt", OLD)
    same = await _new_version(client, headers, document["id"], "gateway.txt", OLD)
    assert same.status_code == 200 and same.json()["duplicate"] is True
    assert same.json()["new_version"] is None

    assert (await _new_version(client, headers, document["id"], "a.txt", NEW)).status_code == 202
    again = await _new_version(client, headers, document["id"], "b.txt", NEW + b"!")
    assert again.status_code == 409 and "already being read" in again.json()["detail"]
    reprocess = await client.post(f"/api/v1/documents/{document['id']}/reprocess", headers=headers)
    assert reprocess.status_code == 409


async def test_only_who_may_change_a_document_uploads_its_versions(
    client: httpx.AsyncClient, components: Components
) -> None:
    owner = await auth_headers(client)
    stranger = await auth_headers(client)
    document = await upload_and_process(client, components, owner, "gateway.txt", OLD)
    response = await _new_version(client, stranger, document["id"], "gateway.txt", NEW)
    assert response.status_code == 404  # not readable: not even its existence is told
    unfinished = await upload(client, owner, "slow.txt", b"Not processed yet.")
    response = await _new_version(client, owner, unfinished.json()["id"], "slow.txt", NEW)
    assert response.status_code == 409 and "queued" in response.json()["detail"]


async def test_deleting_a_document_drops_its_waiting_version_and_file(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, "gateway.txt", OLD)
    waiting = NEW + b" (deleted before it was read)"
    response = await _new_version(client, headers, document["id"], "gateway.txt", waiting)
    assert response.status_code == 202
    files = [path for path in components.storage.root.rglob("*") if path.is_file()]
    new_file = next(
        p
        for p in files
        if hashlib.sha256(p.read_bytes()).digest() == hashlib.sha256(waiting).digest()
    )
    deleted = await client.delete(f"/api/v1/documents/{document['id']}", headers=headers)
    assert deleted.status_code == 204
    assert await IngestionWorker(components).run_until_idle() == 0
    assert not new_file.exists()


def _html(text: bytes, published: str | None) -> bytes:
    meta = f'<meta name="date" content="{published}">' if published else ""
    return f"<html><head>{meta}</head><body><p>{text.decode()}</p></body></html>".encode()


async def test_a_new_version_brings_its_own_date_or_none(
    client: httpx.AsyncClient, components: Components
) -> None:
    """The document's date is its current file's: a new version's replaces it, and a version
    with no date leaves the document with none (not the old file's)."""
    headers = await auth_headers(client)
    old = _html(OLD, "2020-02-02")
    document = await upload_and_process(client, components, headers, "gateway.html", old)
    assert document["document_date"] == "2020-02-02"
    new = _html(NEW, "2023-04-01")
    assert (await _new_version(client, headers, document["id"], "g.html", new)).status_code == 202
    await IngestionWorker(components).run_until_idle()
    assert (await _document(client, headers, document["id"]))["document_date"] == "2023-04-01"
    undated = _html(NEW + b" Now also on 9444.", None)
    added = await _new_version(client, headers, document["id"], "g.html", undated)
    assert added.status_code == 202
    await IngestionWorker(components).run_until_idle()
    latest = await _document(client, headers, document["id"])
    assert latest["version"] == 3 and latest["document_date"] is None
