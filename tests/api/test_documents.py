from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.documents.models import IngestionJob, JobStatus
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.documents import upload, upload_and_process, vector_ref
from tests.support.files import filler, make_pdf
from tests.support.users import admin_headers, auth_headers

ADMIN_UPLOAD = "/api/v1/admin/documents"

PDF_FIXTURES = Path(__file__).parents[1] / "fixtures" / "pdf"


async def test_upload_is_accepted_then_processed_with_pages(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    pdf = make_pdf([filler("volcanoes", 40), filler("glaciers", 40), filler("deserts", 5)])
    response = await upload(client, headers, "earth.pdf", pdf)
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["status"] == "queued" and accepted["progress"] == 0.0
    assert accepted["queue_position"] == 1  # nothing else is waiting
    assert accepted["content_type"] == "application/pdf" and accepted["size_bytes"] == len(pdf)

    await IngestionWorker(components).run_until_idle()
    document = (await client.get(f"/api/v1/documents/{accepted['id']}", headers=headers)).json()
    assert document["status"] == "completed", document
    assert document["page_count"] == 3 and document["progress"] == 1.0
    assert document["chunk_count"] >= 5 and document["chunks_done"] == document["chunk_count"]

    # Every chunk knows the page it came from.
    embedding = components.embedder.embed(["glaciers"])[0]
    hits = components.vector_store.query(embedding, [vector_ref(accepted)], top_k=3)
    passages = await components.lexical.passages_of([hit.chunk for hit in hits])
    assert len(passages) == 3
    assert all(p.page == 2 and "glaciers" in p.text for p in passages.values())
    assert components.vector_store.count(vector_ref(accepted)) == document["chunk_count"]


async def test_real_pdf_chunks_keep_page_numbers(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    pdf = (PDF_FIXTURES / "pdflatex-4-pages.pdf").read_bytes()
    document = await upload_and_process(client, components, headers, "four.pdf", pdf)
    assert document["status"] == "completed" and document["page_count"] == 4
    result = components.vector_store.query(
        components.embedder.embed(["text without a meaning"])[0], [vector_ref(document)], 50
    )
    # The pages are kept with the vectors and with the rows the answers are read from.
    chunks = [hit.chunk for hit in result]
    assert {chunk.page for chunk in components.vector_store.read(chunks)} == {1, 2, 3, 4}
    passages = await components.lexical.passages_of(chunks)
    assert {passage.page for passage in passages.values()} == {1, 2, 3, 4}


async def test_markdown_and_text_are_ingested(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    markdown = await upload_and_process(
        client, components, headers, "notes.md", b"# Notes\n\nThe launch code is orange."
    )
    text = await upload_and_process(
        client, components, headers, "plain.txt", "Ünïcode text is fine.".encode()
    )
    assert markdown["status"] == text["status"] == "completed"
    assert markdown["content_type"] == "text/markdown" and text["content_type"] == "text/plain"
    assert markdown["page_count"] == 1 and markdown["chunk_count"] == 1


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("libreoffice-writer-password.pdf", "password-protected"),
        ("imagemagick-images.pdf", "No text found in the PDF, even by OCR"),
    ],
)
async def test_unusable_pdfs_fail_with_a_clear_error(
    client: httpx.AsyncClient, components: Components, fixture: str, message: str
) -> None:
    headers = await auth_headers(client)
    pdf = (PDF_FIXTURES / fixture).read_bytes()
    document = await upload_and_process(client, components, headers, fixture, pdf)
    assert document["status"] == "failed"
    assert message in document["error"]


async def test_corrupt_pdf_fails_cleanly(client: httpx.AsyncClient, components: Components) -> None:
    headers = await auth_headers(client)
    corrupt = b"%PDF-1.7\n" + bytes(range(256)) * 20 + b"\n%%EOF"
    document = await upload_and_process(client, components, headers, "broken.pdf", corrupt)
    assert document["status"] == "failed"
    assert document["error"]
    assert components.vector_store.count(vector_ref(document)) == 0


async def test_text_with_bad_bytes_after_the_head_fails_with_position(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    content = b"a" * 20_000 + "é".encode("latin-1") + b" rest"
    document = await upload_and_process(client, components, headers, "mixed.txt", content)
    assert document["status"] == "failed"
    assert "not valid UTF-8" in document["error"] and "20000" in document["error"]


@pytest.mark.parametrize(
    ("name", "content", "status", "fragment"),
    [
        ("empty.pdf", b"", 422, "empty"),
        ("image.pdf", b"\x89PNG\r\n\x1a\n" + b"0" * 100, 415, "not a PDF"),
        ("image.txt", b"GIF89a" + b"0" * 100, 415, "GIF"),
        ("program.exe", b"MZ\x90\x00" + b"0" * 100, 415, "executable"),
        ("data.json", b'{"a": 1}\n', 415, "not supported"),
    ],
)
async def test_bad_uploads_are_refused(
    client: httpx.AsyncClient, name: str, content: bytes, status: int, fragment: str
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, name, content)
    assert response.status_code == status
    assert fragment in response.json()["detail"]
    listing = (await client.get("/api/v1/documents", headers=headers)).json()
    assert listing["total"] == 0


async def test_oversize_upload_is_413(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    too_big = b"a" * (2 * 1024 * 1024 + 10)  # the test settings allow 2 MB
    response = await upload(client, headers, "big.txt", too_big)
    assert response.status_code == 413
    # Announced far beyond the limit: refused before the body is read.
    huge = await client.post(
        "/api/v1/documents",
        headers={**headers, "content-length": str(50 * 1024 * 1024)},
        content=b"x",
    )
    assert huge.status_code == 413


async def test_filename_with_path_parts_is_cleaned(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, "../..\\windows\\my   notes.txt", b"hello there")
    assert response.status_code == 202
    assert response.json()["filename"] == "my notes.txt"


async def test_other_users_never_see_a_private_document(
    client: httpx.AsyncClient, components: Components
) -> None:
    alice = await auth_headers(client)
    bob = await auth_headers(client)
    document = await upload_and_process(
        client, components, alice, "alice.md", b"Alice's secret plan."
    )
    url = f"/api/v1/documents/{document['id']}"
    for method, path in [
        ("GET", url),
        ("GET", f"{url}/file"),
        ("DELETE", url),
        ("POST", f"{url}/reprocess"),
    ]:
        response = await client.request(method, path, headers=bob)
        assert response.status_code == 404, (method, path)
    assert (await client.get("/api/v1/documents", headers=bob)).json()["total"] == 0
    assert (await client.get(f"{url}/file", headers=alice)).content == b"Alice's secret plan."


async def test_shared_document_is_readable_by_all_and_changed_by_admins_only(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    admin = await admin_headers(client, session)
    user = await auth_headers(client)
    assert (
        await upload(client, user, "x.md", b"x", url="/api/v1/admin/documents")
    ).status_code == 403
    shared = await upload_and_process(
        client,
        components,
        admin,
        "handbook.md",
        b"The office opens at nine.",
        url="/api/v1/admin/documents",
    )
    assert shared["visibility"] == "shared" and shared["status"] == "completed"
    url = f"/api/v1/documents/{shared['id']}"
    assert (await client.get(url, headers=user)).status_code == 200
    listing = (await client.get("/api/v1/documents", headers=user)).json()
    assert [item["id"] for item in listing["items"]] == [shared["id"]]
    assert (await client.delete(url, headers=user)).status_code == 403
    assert (await client.post(f"{url}/reprocess", headers=user)).status_code == 403

    # The admin's own private files are not among the shared ones (the admin page lists these).
    private = await upload(client, admin, "admin-notes.md", b"Only mine.")
    assert private.status_code == 202
    everything = (await client.get("/api/v1/documents", headers=admin)).json()
    assert {item["filename"] for item in everything["items"]} == {"handbook.md", "admin-notes.md"}
    only_shared = await client.get("/api/v1/documents?visibility=shared", headers=admin)
    assert [item["id"] for item in only_shared.json()["items"]] == [shared["id"]]
    assert only_shared.json()["total"] == 1
    listing = (await client.get("/api/v1/documents?visibility=private", headers=user)).json()
    assert listing["total"] == 0  # a user's private view never holds the shared handbook

    assert (await client.delete(url, headers=admin)).status_code == 204


async def test_delete_removes_vectors_and_hides_the_document(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "gone.md", filler("tides", 60).encode()
    )
    document_id = uuid.UUID(document["id"])
    assert components.vector_store.count(vector_ref(document)) > 0
    assert (
        await client.delete(f"/api/v1/documents/{document_id}", headers=headers)
    ).status_code == 204
    assert components.vector_store.count(vector_ref(document)) == 0
    assert (
        await client.get(f"/api/v1/documents/{document_id}", headers=headers)
    ).status_code == 404
    assert (await client.get("/api/v1/documents", headers=headers)).json()["total"] == 0


async def test_reprocess_is_idempotent(client: httpx.AsyncClient, components: Components) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "again.md", filler("rivers", 60).encode()
    )
    before = components.vector_store.count(vector_ref(document))
    response = await client.post(f"/api/v1/documents/{document['id']}/reprocess", headers=headers)
    assert response.status_code == 202 and response.json()["status"] == "queued"
    await IngestionWorker(components).run_until_idle()
    after = (await client.get(f"/api/v1/documents/{document['id']}", headers=headers)).json()
    assert after["status"] == "completed"
    assert components.vector_store.count(vector_ref(document)) == before == after["chunk_count"]


async def test_list_filters_and_paginates(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    category = (
        await client.post("/api/v1/categories", headers=headers, json={"name": "work"})
    ).json()
    await upload(client, headers, "a.md", b"alpha", data={"category_id": category["id"]})
    await upload(client, headers, "b.md", b"beta")
    await upload(client, headers, "c.md", b"gamma")
    in_category = (
        await client.get(f"/api/v1/documents?category_id={category['id']}", headers=headers)
    ).json()
    assert [item["filename"] for item in in_category["items"]] == ["a.md"]
    waiting = (await client.get("/api/v1/documents?status=queued&limit=2", headers=headers)).json()
    assert waiting["total"] == 3 and len(waiting["items"]) == 2
    # One owner's queue, oldest first.
    listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
    positions = {item["filename"]: item["queue_position"] for item in listed}
    assert positions == {"a.md": 1, "b.md": 2, "c.md": 3}
    # Another user's category cannot be used.
    other = await auth_headers(client)
    response = await upload(client, other, "d.md", b"delta", data={"category_id": category["id"]})
    assert response.status_code == 404


async def test_documents_are_found_by_part_of_their_name(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    for name in ("Budget 2027.md", "budget_notes.md", "100%_sure.md", "minutes.md"):
        await upload(client, headers, name, name.encode())

    async def named(fragment: str, reader: dict[str, str] = headers) -> list[str]:
        listed = await client.get("/api/v1/documents", headers=reader, params={"name": fragment})
        assert listed.status_code == 200, listed.text
        return sorted(item["filename"] for item in listed.json()["items"])

    assert await named("BUDGET") == ["Budget 2027.md", "budget_notes.md"]
    # Wildcards are letters like any other.
    assert await named("%") == ["100%_sure.md"]
    assert await named("t_n") == ["budget_notes.md"]
    assert await named("nothing like it") == []
    # Only what the caller may read.
    assert await named("budget", await auth_headers(client)) == []


async def test_crashed_worker_job_is_taken_again(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, "crash.md", filler("comets", 30).encode())
    document_id = uuid.UUID(response.json()["id"])
    # A worker claims the job and dies before finishing: the job stays "running".
    worker = IngestionWorker(components, worker_id="doomed")
    claimed = await worker.claims.claim()
    assert claimed is not None and claimed.document_id == document_id
    assert await IngestionWorker(components).run_once() is False  # not stale yet: left alone

    stale = utcnow() - timedelta(seconds=components.settings.worker.stale_after_seconds + 5)
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.id == claimed.id)
        .values(claimed_at=stale, heartbeat_at=stale)
    )
    await session.commit()
    assert await IngestionWorker(components).run_once() is True
    document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
    assert document["status"] == "completed"
    job = (
        await session.execute(select(IngestionJob).where(IngestionJob.id == claimed.id))
    ).scalar_one()
    await session.refresh(job)
    assert job.status == JobStatus.done and job.attempts == 2


async def test_job_that_keeps_crashing_ends_failed(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, "doomed.md", b"short text")
    document_id = uuid.UUID(response.json()["id"])
    limit = components.settings.worker.max_attempts
    stale = utcnow() - timedelta(hours=1)
    await session.execute(
        update(IngestionJob)
        .where(IngestionJob.document_id == document_id)
        .values(status=JobStatus.running, attempts=limit, claimed_at=stale)
    )
    await session.commit()
    assert await IngestionWorker(components).run_once() is True
    document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
    assert document["status"] == "failed"
    assert "interrupted too many times" in document["error"]


async def test_transient_failure_is_retried_then_fails(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    class BrokenEmbedder:
        name = components.embedder.name
        dimension = components.embedder.dimension

        def embed(self, texts: object) -> list[list[float]]:
            raise ConnectionError("embedding service went away")

    import dataclasses

    broken = dataclasses.replace(components, embedder=BrokenEmbedder())
    headers = await auth_headers(client)
    response = await upload(client, headers, "flaky.md", b"some words")
    document_id = uuid.UUID(response.json()["id"])
    for attempt in range(components.settings.worker.max_attempts):
        # Make the retry due now instead of after its back-off.
        await session.execute(
            update(IngestionJob)
            .where(IngestionJob.document_id == document_id)
            .values(available_at=utcnow())
        )
        await session.commit()
        assert await IngestionWorker(broken).run_once() is True, attempt
        status = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
        expected = "failed" if attempt == components.settings.worker.max_attempts - 1 else "queued"
        assert status["status"] == expected
    # The owner is told what kind of failure it was; the raw error stays with the job.
    assert status["error"] == (
        "Processing failed after 3 attempts: a service it needs was unreachable; try reprocessing"
    )
    job = (
        await session.execute(select(IngestionJob).where(IngestionJob.document_id == document_id))
    ).scalar_one()
    await session.refresh(job)
    assert job.last_error == "ConnectionError: embedding service went away"


async def test_the_worker_logs_what_it_ingested(
    client: httpx.AsyncClient, components: Components, caplog: pytest.LogCaptureFixture
) -> None:
    headers = await auth_headers(client)
    pdf = make_pdf([filler("tides", 10), filler("rivers", 10), filler("bridges", 10)])
    with caplog.at_level(logging.INFO, logger="docchat.ingestion.worker"):
        document = await upload_and_process(client, components, headers, "log.pdf", pdf)
    # getMessage() formats the record: a None page count made it raise (a logging error).
    [message] = [r.getMessage() for r in caplog.records if "ingested" in str(r.msg)]
    assert f"{document['id']} ingested: 3 pages, {document['chunk_count']} chunks" in message


async def test_a_deleted_documents_file_goes_when_no_document_uses_it(
    client: httpx.AsyncClient, components: Components
) -> None:
    alice, bob = await auth_headers(client), await auth_headers(client)
    same = f"Minutes of the harbour board, {uuid.uuid4()}".encode()
    first = (await upload(client, alice, "minutes.txt", same)).json()
    second = (await upload(client, bob, "copy.txt", same)).json()
    key = f"{first['sha256'][:2]}/{first['sha256']}"
    assert await components.storage.exists(key)
    assert (
        await client.delete(f"/api/v1/documents/{first['id']}", headers=alice)
    ).status_code == 204
    assert await components.storage.exists(key)  # Bob's document still uses the file
    assert (
        await client.delete(f"/api/v1/documents/{second['id']}", headers=bob)
    ).status_code == 204
    assert not await components.storage.exists(key)


async def test_the_same_bytes_again_give_back_the_existing_document_and_nothing_twice(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    alice, bob = await auth_headers(client), await auth_headers(client)
    same = f"Minutes of the harbour board, {uuid.uuid4()}. The quay reopens in May.".encode()
    first = await upload_and_process(client, components, alice, "minutes.txt", same)

    again = await upload(client, alice, "minutes (1).txt", same)
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["id"] == first["id"] and again.json()["filename"] == "minutes.txt"
    listing = (await client.get("/api/v1/documents", headers=alice)).json()
    assert [item["id"] for item in listing["items"]] == [first["id"]]
    usage = (await client.get("/api/v1/users/me/usage", headers=alice)).json()
    assert usage["stored_bytes"] == len(same)  # counted once

    # Other people, and different bytes, are separate documents as before.
    theirs = await upload(client, bob, "minutes.txt", same)
    assert theirs.status_code == 202 and theirs.json()["duplicate"] is False
    changed = await upload(client, alice, "minutes.txt", same + b" Amended.")
    assert changed.status_code == 202 and changed.json()["id"] != first["id"]

    # Once deleted, the same file makes a new document.
    await client.delete(f"/api/v1/documents/{first['id']}", headers=alice)
    fresh = await upload(client, alice, "minutes.txt", same)
    assert fresh.status_code == 202 and fresh.json()["id"] != first["id"]

    # An administrator's shared copy is not their private one.
    admin = await admin_headers(client, session)
    private = await upload(client, admin, "policy.md", b"# Policy\n\nBadges at all times.")
    shared = await upload(
        client, admin, "policy.md", b"# Policy\n\nBadges at all times.", url=ADMIN_UPLOAD
    )
    assert shared.status_code == 202 and shared.json()["id"] != private.json()["id"]
    shared_again = await upload(
        client, admin, "policy.md", b"# Policy\n\nBadges at all times.", url=ADMIN_UPLOAD
    )
    assert shared_again.status_code == 200 and shared_again.json()["id"] == shared.json()["id"]


async def test_two_uploads_of_the_same_bytes_at_once_make_one_document(
    live_client: httpx.AsyncClient,
) -> None:
    headers = await auth_headers(live_client)
    same = f"Simultaneous {uuid.uuid4()}".encode()
    replies = await asyncio.gather(
        *(upload(live_client, headers, f"copy-{n}.txt", same) for n in range(4))
    )
    assert sorted(reply.status_code for reply in replies) == [200, 200, 200, 202]
    assert len({reply.json()["id"] for reply in replies}) == 1
    # This client commits for real: leave no queued job behind for the queue tests.
    document_id = replies[0].json()["id"]
    deleted = await live_client.delete(f"/api/v1/documents/{document_id}", headers=headers)
    assert deleted.status_code == 204
