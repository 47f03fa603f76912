"""Sources that keep a collection in step: a folder on the server and an S3 bucket prefix
(moto's S3 server on loopback), synced incrementally by the real worker path."""

from __future__ import annotations

import dataclasses
import io
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from pypdf import PdfReader, PdfWriter
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import SourceSettings, UrlFetchSettings
from docchat.db import utcnow
from docchat.documents.models import Document, IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.kit.lease import LostClaim
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.sources.models import Source
from docchat.sources.plan import Progress
from docchat.sources.port import SOURCES
from docchat.sources.sync import SourceSyncer
from tests.api.test_collections import invite
from tests.support.chat import ask
from tests.support.fake_source import FAKE
from tests.support.files import make_pdf
from tests.support.git_server import git_server
from tests.support.llm_server import ScriptedLLM
from tests.support.s3_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    bucket_client,
    empty_and_remove,
    s3_server,
)
from tests.support.users import admin_headers, auth_headers
from tests.support.web_site import DocsSite

HANDBOOK = b"# Handbook\n\nEvery employee has 25 days of holiday a year."
FERRY = b"The island ferry leaves the harbour at nine and returns at six."
BUCKET = "team-knowledge"

Client = tuple[httpx.AsyncClient, Components]


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as endpoint:
        yield endpoint


@pytest_asyncio.fixture
async def served(components: Components, tmp_path: Path) -> AsyncIterator[Client]:
    """An app whose administrators may add folders under `tmp_path/shared`, and whose sources
    may reach the S3 server on 127.0.0.1."""
    (tmp_path / "shared").mkdir()
    settings = components.settings.model_copy(
        update={
            "sources": SourceSettings(  # type: ignore[call-arg]
                _env_file=None, folder_roots=[tmp_path / "shared"]
            ),
            "url_fetch": UrlFetchSettings(  # type: ignore[call-arg]
                _env_file=None, allowed_hosts=["127.0.0.1"]
            ),
        }
    )
    parts = dataclasses.replace(components, settings=settings)
    app = create_app(settings, run_worker=False)
    attach_components(app, parts)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client, parts


async def _collection(client: httpx.AsyncClient, headers: dict[str, str], name: str) -> str:
    created = await client.post("/api/v1/collections", headers=headers, json={"name": name})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def _add_folder(
    client: httpx.AsyncClient, headers: dict[str, str], collection: str, name: str, folder: Path
) -> httpx.Response:
    body = {"name": name, "kind": "folder", "settings": {"path": str(folder)}}
    return await client.post(
        f"/api/v1/collections/{collection}/sources", headers=headers, json=body
    )


async def _sync(parts: Components) -> None:
    """What the worker does: sync what is due, then read what the sync queued."""
    await SourceSyncer(parts).run_until_idle()
    await IngestionWorker(parts).run_until_idle()


async def _source(client: httpx.AsyncClient, headers: dict[str, str], source: str) -> Any:
    response = await client.get(f"/api/v1/sources/{source}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def _names(client: httpx.AsyncClient, headers: dict[str, str], collection: str) -> list[str]:
    listed = await client.get(f"/api/v1/collections/{collection}/documents", headers=headers)
    assert listed.status_code == 200, listed.text
    return sorted(document["filename"] for document in listed.json()["items"])


async def _jobs(session: AsyncSession) -> int:
    return int((await session.execute(select(func.count(IngestionJob.id)))).scalar_one())


def _write(folder: Path, name: str, content: bytes) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists()
    path.write_bytes(content)
    if existed:  # a later modification time, as an editor saving it would leave
        later = path.stat().st_mtime_ns + 2_000_000_000
        os.utime(path, ns=(later, later))


async def test_a_folder_source_keeps_its_collection_in_step(
    served: Client, session: AsyncSession, tmp_path: Path, fresh_llm: ScriptedLLM
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    reader, outsider = await auth_headers(client), await auth_headers(client)
    collection = await _collection(client, admin, "Handbooks")
    await invite(client, admin, collection, reader)
    folder = tmp_path / "shared" / "handbooks"
    _write(folder, "handbook.md", HANDBOOK)
    _write(folder, "travel/ferry.txt", FERRY)

    created = await _add_folder(client, admin, collection, "HR share", folder)
    assert created.status_code == 201, created.text
    source = created.json()["id"]
    assert created.json()["interval_minutes"] == 60 and created.json()["state"] == "idle"
    await _sync(parts)

    synced = await _source(client, admin, source)
    assert synced["state"] == "idle" and synced["last_error"] is None
    assert synced["progress"]["added"] == 2 and synced["progress"]["done"] == 2
    assert await _names(client, reader, collection) == ["ferry.txt", "handbook.md"]
    fresh_llm.default.content = "At nine [1]."
    answer = await ask(client, reader, "When does the island ferry leave the harbour?")
    sources = answer.json()["assistant_message"]["sources"]
    assert sources and sources[0]["document_name"] == "ferry.txt", answer.text
    # The source and what it brought are the collection's: others see neither.
    assert (await client.get(f"/api/v1/sources/{source}", headers=outsider)).status_code == 404
    first = (await client.get(f"/api/v1/collections/{collection}/documents", headers=admin)).json()
    ferry_id = next(d["id"] for d in first["items"] if d["filename"] == "ferry.txt")
    assert (await client.get(f"/api/v1/documents/{ferry_id}", headers=outsider)).status_code == 404

    # Nothing changed: nothing is read or embedded again.
    jobs_before = await _jobs(session)
    assert (await client.post(f"/api/v1/sources/{source}/sync", headers=admin)).status_code == 202
    await _sync(parts)
    again = await _source(client, admin, source)
    assert again["progress"]["unchanged"] == 2 and again["progress"]["added"] == 0
    assert await _jobs(session) == jobs_before

    # One changed, one removed, one added, one that cannot be read.
    _write(folder, "handbook.md", HANDBOOK.replace(b"25", b"30"))
    (folder / "travel" / "ferry.txt").unlink()
    _write(folder, "rota.md", b"# Rota\n\nThe on-call rota changes hands on Mondays.")
    _write(folder, "broken.pdf", b"%PDF-1.7 this is not a PDF at all")
    await client.post(f"/api/v1/sources/{source}/sync", headers=admin)
    await _sync(parts)
    after = await _source(client, admin, source)
    progress = after["progress"]
    assert (progress["added"], progress["changed"], progress["removed"]) == (2, 1, 0 + 1)
    assert await _names(client, reader, collection) == ["broken.pdf", "handbook.md", "rota.md"]
    assert (await client.get(f"/api/v1/documents/{ferry_id}", headers=admin)).status_code == 404
    handbook = next(
        d
        for d in (
            await client.get(f"/api/v1/collections/{collection}/documents", headers=admin)
        ).json()["items"]
        if d["filename"] == "handbook.md"
    )
    assert handbook["version"] == 2
    assert await _jobs(session) == jobs_before + 3  # the new version and the two new files


async def test_a_synced_document_taken_out_by_hand_comes_back_at_the_next_sync(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Mirror")
    folder = tmp_path / "shared" / "mirror"
    _write(folder, "a.md", HANDBOOK)
    source = (await _add_folder(client, admin, collection, "Mirror", folder)).json()["id"]
    await _sync(parts)
    listed = await client.get(f"/api/v1/collections/{collection}/documents", headers=admin)
    document = listed.json()["items"][0]["id"]
    taken = await client.delete(
        f"/api/v1/collections/{collection}/documents/{document}", headers=admin
    )
    assert taken.status_code < 300 and await _names(client, admin, collection) == []
    jobs = await _jobs(session)
    await client.post(f"/api/v1/sources/{source}/sync", headers=admin)
    await _sync(parts)
    assert await _names(client, admin, collection) == ["a.md"]
    assert await _jobs(session) == jobs, "put back as it was: nothing read again"


async def test_a_file_that_cannot_be_brought_in_is_listed_with_its_reason(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Mixed")
    folder = tmp_path / "shared" / "mixed"
    _write(folder, "fine.md", HANDBOOK)
    _write(folder, "huge.txt", b"x" * (parts.settings.max_upload_bytes + 1))
    created = await _add_folder(client, admin, collection, "Mixed", folder)
    source = created.json()["id"]
    await _sync(parts)
    state = await _source(client, admin, source)
    assert state["progress"]["failed"] == 1 and state["progress"]["added"] == 1
    assert "1 item(s)" in state["last_error"]
    failed = await client.get(
        f"/api/v1/sources/{source}/items", headers=admin, params={"failed": True}
    )
    (item,) = failed.json()["items"]
    assert item["key"] == "huge.txt" and item["document_id"] is None
    assert "MB" in item["error"], item
    # Fixed at the source: the next sync brings it in.
    _write(folder, "huge.txt", b"small now")
    await client.post(f"/api/v1/sources/{source}/sync", headers=admin)
    await _sync(parts)
    assert (await _source(client, admin, source))["progress"]["added"] == 1
    assert await _names(client, admin, collection) == ["fine.md", "huge.txt"]


async def test_who_may_add_and_change_sources(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, _ = served
    admin = await admin_headers(client, session)
    owner, viewer = await auth_headers(client), await auth_headers(client)
    collection = await _collection(client, owner, "Team")
    await invite(client, owner, collection, viewer)
    url = f"/api/v1/collections/{collection}/sources"
    folder = {"name": "F", "kind": "folder", "settings": {"path": str(tmp_path / "shared")}}
    assert (await client.post(url, headers=owner, json=folder)).status_code == 403
    s3 = {
        "name": "B",
        "kind": "s3",
        "settings": {"bucket": "b", "endpoint_url": "http://127.0.0.1:9"},
    }
    assert (await client.post(url, headers=viewer, json=s3)).status_code == 403
    made = await client.post(url, headers=owner, json=s3)
    assert made.status_code == 201, made.text
    assert (await client.get(url, headers=viewer)).json()[0]["name"] == "B"
    source = made.json()["id"]
    renamed = await client.patch(f"/api/v1/sources/{source}", headers=viewer, json={"name": "X"})
    assert renamed.status_code == 403
    # Refused with what to do: a folder outside the roots, a private address, a short interval.
    outside = {**folder, "settings": {"path": "/etc"}}
    refused = await client.post(url, headers=admin, json=outside)
    assert refused.status_code in (404, 422)
    admin_collection = await _collection(client, admin, "Admin's")
    refused = await client.post(
        f"/api/v1/collections/{admin_collection}/sources", headers=admin, json=outside
    )
    assert refused.status_code == 422 and "not inside" in refused.json()["detail"]
    private = {**s3, "settings": {"bucket": "b", "endpoint_url": "http://10.1.2.3:9000"}}
    refused = await client.post(url, headers=owner, json=private)
    assert refused.status_code == 400 and "URL_FETCH_ALLOWED_HOSTS" in refused.json()["detail"]
    often = await client.post(url, headers=owner, json={**s3, "interval_minutes": 1})
    assert often.status_code == 422 and "SOURCES_MIN_INTERVAL_MINUTES" in often.json()["detail"]
    unknown = {**s3, "settings": {"bucket": "b", "path": "/"}}
    assert (await client.post(url, headers=owner, json=unknown)).status_code == 422


async def test_a_bucket_prefix_with_credentials(
    served: Client, session: AsyncSession, s3_endpoint: str
) -> None:
    client, parts = served
    bucket = bucket_client(s3_endpoint)
    bucket.create_bucket(Bucket=BUCKET)
    try:
        bucket.put_object(Bucket=BUCKET, Key="wiki/handbook.md", Body=HANDBOOK)
        bucket.put_object(Bucket=BUCKET, Key="wiki/travel/ferry.txt", Body=FERRY)
        bucket.put_object(Bucket=BUCKET, Key="other/secret.txt", Body=b"not the source's")
        owner = await auth_headers(client)
        collection = await _collection(client, owner, "Wiki")
        body = {
            "name": "Wiki bucket",
            "kind": "s3",
            "settings": {"bucket": "no-such-bucket", "prefix": "wiki", "endpoint_url": s3_endpoint},
            "secrets": {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY},
        }
        made = await client.post(
            f"/api/v1/collections/{collection}/sources", headers=owner, json=body
        )
        assert made.status_code == 201, made.text
        assert made.json()["has_secrets"] is True and SECRET_ACCESS_KEY not in made.text
        source = made.json()["id"]
        stored = await session.get(Source, uuid.UUID(source))
        assert stored is not None and stored.secrets and SECRET_ACCESS_KEY not in stored.secrets

        # A bucket that is not there: the sync fails, says why, and backs off.
        await _sync(parts)
        failing = await _source(client, owner, source)
        assert failing["state"] == "failing" and "NoSuchBucket" in failing["last_error"]
        assert failing["next_sync_at"] is not None

        fixed = await client.patch(
            f"/api/v1/sources/{source}",
            headers=owner,
            json={
                "settings": {"bucket": BUCKET, "prefix": "wiki", "endpoint_url": s3_endpoint},
                # Another bucket: the credentials are asked for again.
                "secrets": body["secrets"],
            },
        )
        assert fixed.status_code == 200, fixed.text
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await _sync(parts)
        synced = await _source(client, owner, source)
        assert synced["state"] == "idle", synced
        assert await _names(client, owner, collection) == ["ferry.txt", "handbook.md"]
        items = (await client.get(f"/api/v1/sources/{source}/items", headers=owner)).json()
        assert [item["key"] for item in items["items"]] == ["handbook.md", "travel/ferry.txt"]
    finally:
        empty_and_remove(bucket, BUCKET)


async def test_a_sync_cut_short_is_finished_by_another_worker_without_duplicates(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Resumed")
    folder = tmp_path / "shared" / "resumed"
    for number in range(3):
        _write(folder, f"note-{number}.md", f"# Note {number}\n\nRoom {number} is free.".encode())
    created = await _add_folder(client, admin, collection, "Notes", folder)
    source_id = uuid.UUID(created.json()["id"])

    # The first worker brings one file in, then dies (no heartbeat from then on).
    first = SourceSyncer(parts)
    claim = await first.claims.claim()
    assert claim is not None and claim.source_id == source_id
    from docchat.sources.connector import open_connector

    row = await session.get(Source, source_id)
    assert row is not None
    connector = open_connector(row, parts.settings)
    listed = await first._listing(connector)
    plan = await first._plan(claim, listed, Progress(listed=len(listed)))
    item, known = plan.bring[0]
    await first.items.bring(claim, connector, item, known, Progress())
    # Another worker sees the claim go stale and takes the source over.
    stale = utcnow() - timedelta(seconds=parts.settings.worker.stale_after_seconds + 1)
    await session.execute(update(Source).where(Source.id == source_id).values(heartbeat_at=stale))
    await session.commit()
    assert await SourceSyncer(parts).run_until_idle() == 1
    with pytest.raises(LostClaim):  # the first one, back, can write nothing more
        await first.items.bring(claim, connector, plan.bring[1][0], None, Progress())

    documents = await session.execute(
        select(Document.filename).where(
            Document.deleted_at.is_(None), Document.owner_id == row.owner_id
        )
    )
    assert sorted(documents.scalars()) == ["note-0.md", "note-1.md", "note-2.md"]
    state = await _source(client, admin, str(source_id))
    assert state["state"] == "idle"
    assert state["progress"]["unchanged"] == 1 and state["progress"]["added"] == 2


async def test_pausing_stops_a_sync_and_deleting_takes_the_documents_or_leaves_them(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Paused")
    folder = tmp_path / "shared" / "paused"
    _write(folder, "a.md", HANDBOOK)
    _write(folder, "b.md", FERRY)
    url = f"/api/v1/collections/{collection}/sources"
    body = {"name": "P", "kind": "folder", "settings": {"path": str(folder)}}
    source = (await client.post(url, headers=admin, json=body)).json()["id"]

    syncer = SourceSyncer(parts)
    claim = await syncer.claims.claim()
    assert claim is not None
    paused = await client.patch(f"/api/v1/sources/{source}", headers=admin, json={"paused": True})
    assert paused.status_code == 200 and paused.json()["state"] == "paused"
    with pytest.raises(LostClaim):
        await syncer._sync(claim)
    assert await SourceSyncer(parts).run_until_idle() == 0, "a paused source is not synced"
    assert (await client.post(f"/api/v1/sources/{source}/sync", headers=admin)).status_code == 409
    resumed = await client.patch(f"/api/v1/sources/{source}", headers=admin, json={"paused": False})
    assert resumed.json()["state"] == "idle"
    await _sync(parts)
    assert await _names(client, admin, collection) == ["a.md", "b.md"]

    # Deleted, keeping its documents: they stay in the collection.
    kept = await client.delete(
        f"/api/v1/sources/{source}", headers=admin, params={"keep_documents": True}
    )
    assert kept.status_code == 204
    assert await _names(client, admin, collection) == ["a.md", "b.md"]
    assert (await client.get(url, headers=admin)).json() == []

    # Another, deleted with its documents: a worker removes them, then the source.
    other = tmp_path / "shared" / "other"
    _write(other, "c.md", b"# C\n\nThe car park closes at ten.")
    second = (
        await client.post(
            url, headers=admin, json={**body, "name": "Q", "settings": {"path": str(other)}}
        )
    ).json()["id"]
    await _sync(parts)
    assert "c.md" in await _names(client, admin, collection)
    gone = await client.delete(f"/api/v1/sources/{second}", headers=admin)
    assert gone.status_code == 202
    assert (await client.get(f"/api/v1/sources/{second}", headers=admin)).status_code == 404
    await SourceSyncer(parts).run_until_idle()
    assert await _names(client, admin, collection) == ["a.md", "b.md"]
    assert await session.get(Source, uuid.UUID(second)) is None
    audit = await client.get("/api/v1/admin/audit", headers=admin, params={"target_id": second})
    actions = {entry["action"] for entry in audit.json()["items"]}
    assert {"source.created", "source.deleted"} <= actions


async def test_a_git_branch_as_a_source(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Docs site")
    with git_server(tmp_path / "site.git") as (url, repository):
        files = {"docs/index.md": HANDBOOK, "docs/ferry.txt": FERRY, "app/main.py": b"print()"}
        repository.commit(files)
        body = {
            "name": "Docs",
            "kind": "git",
            "settings": {"url": url, "ref": "release", "folder": "docs"},
            "secrets": {"token": "glpat-not-needed-here"},
        }
        made = await client.post(
            f"/api/v1/collections/{collection}/sources", headers=owner, json=body
        )
        assert made.status_code == 201, made.text
        source = made.json()["id"]
        await _sync(parts)
        failing = await _source(client, owner, source)
        assert failing["state"] == "failing" and "'release'" in failing["last_error"]

        await client.patch(
            f"/api/v1/sources/{source}",
            headers=owner,
            json={"settings": {"url": url, "ref": "main", "folder": "docs"}},
        )
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await _sync(parts)
        assert await _names(client, owner, collection) == ["ferry.txt", "index.md"]

        # A push: one file changed, one gone; the next sync follows it.
        repository.commit({"docs/index.md": HANDBOOK.replace(b"25", b"30")})
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await _sync(parts)
        progress = (await _source(client, owner, source))["progress"]
        assert (progress["changed"], progress["removed"]) == (1, 1), progress
        assert await _names(client, owner, collection) == ["index.md"]
    cache = parts.settings.data_dir / "sources" / uuid.UUID(source).hex
    assert cache.is_dir(), "the fetched repository is kept for the next sync"
    removed = await client.delete(
        f"/api/v1/sources/{source}", headers=owner, params={"keep_documents": True}
    )
    assert removed.status_code == 204
    assert not cache.exists()


def _bounded(parts: Components, **limits: Any) -> Components:
    """The same parts with other source limits (SOURCES_GIT_MAX_BYTES, ...) for the syncer."""
    sources = parts.settings.sources.model_copy(update=limits)
    return dataclasses.replace(
        parts, settings=parts.settings.model_copy(update={"sources": sources})
    )


async def _add(
    client: httpx.AsyncClient, headers: dict[str, str], collection: str, body: Any
) -> str:
    made = await client.post(
        f"/api/v1/collections/{collection}/sources", headers=headers, json=body
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def test_a_git_fetch_past_its_bounds_is_stopped_discarded_and_not_retried(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Big repository")
    with git_server(tmp_path / "big.git") as (url, repository):
        # 300 KB that does not compress, and 15 small files (with the trees and the commit,
        # 20 objects).
        files = {f"notes/{index}.md": b"note %d" % index for index in range(15)}
        repository.commit({**files, "data/blob.txt": os.urandom(300 * 1024)})
        body = {"name": "Big", "kind": "git", "settings": {"url": url, "ref": "main"}}
        source = await _add(client, owner, collection, body)
        cache = parts.settings.data_dir / "sources" / uuid.UUID(source).hex

        await SourceSyncer(_bounded(parts, git_max_bytes=64 * 1024)).run_until_idle()
        state = await _source(client, owner, source)
        assert state["state"] == "failing", state
        assert "SOURCES_GIT_MAX_BYTES" in state["last_error"], state
        assert "not tried again" in state["last_error"] and state["next_sync_at"] is None
        assert not list(cache.rglob("*.pack")) and not list(cache.rglob("incoming-*"))
        # Nothing is due: the worker does not fetch it again on its own.
        asked = repository.requests
        assert await SourceSyncer(_bounded(parts, git_max_bytes=64 * 1024)).run_until_idle() == 0
        assert repository.requests == asked

        # Sync now tries again, when asked; the object count is a bound of its own.
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await SourceSyncer(_bounded(parts, git_max_objects=10)).run_until_idle()
        state = await _source(client, owner, source)
        assert "SOURCES_GIT_MAX_OBJECTS" in state["last_error"] and state["next_sync_at"] is None

        # So is what the objects take once unpacked, counted before anything is unpacked.
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await SourceSyncer(_bounded(parts, git_max_inflated_bytes=200 * 1024)).run_until_idle()
        state = await _source(client, owner, source)
        assert "SOURCES_GIT_MAX_INFLATED_BYTES" in state["last_error"], state
        assert state["next_sync_at"] is None
        assert not list(cache.rglob("*.pack")) and not list(cache.rglob("incoming-*"))

        # A slow server: the fetch ends at its deadline (tried again later: it may recover).
        repository.pause_seconds = 5.0
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await SourceSyncer(_bounded(parts, git_timeout_seconds=0.5)).run_until_idle()
        state = await _source(client, owner, source)
        assert "SOURCES_GIT_TIMEOUT_SECONDS" in state["last_error"], state
        assert state["next_sync_at"] is not None
        repository.pause_seconds = 0.0

        # Its settings changed (a folder of small files): tried at once, within the bounds.
        changed = await client.patch(
            f"/api/v1/sources/{source}",
            headers=owner,
            json={"settings": {"url": url, "ref": "main", "folder": "notes"}},
        )
        assert changed.status_code == 200, changed.text
        repository.commit(files)  # the big file went
        await SourceSyncer(_bounded(parts, git_max_bytes=64 * 1024)).run_until_idle()
        state = await _source(client, owner, source)
        assert state["state"] == "idle" and state["progress"]["added"] == 15, state


async def test_git_and_s3_sources_connect_only_to_the_address_they_checked(
    served: Client, s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that resolves to a public address for the checks (at creation and before the
    sync) and to loopback a moment later cannot send the sync's requests there."""
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Rebinding")
    real = socket.getaddrinfo
    answered = [0]  # names of rebind.test resolved so far: the first two are the checks

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not str(host).endswith(".rebind.test"):
            return real(host, port, *args, **kwargs)
        answered[0] += 1
        address = "93.184.215.14" if answered[0] <= 2 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 80)))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with git_server(tmp_path / "rebind.git") as (url, repository):
        repository.commit({"index.md": HANDBOOK})
        port = url.rsplit(":", 1)[1].strip("/")
        git = {"url": f"http://git.rebind.test:{port}/", "ref": "main"}
        git_source = await _add(
            client, owner, collection, {"name": "Git", "kind": "git", "settings": git}
        )
        await SourceSyncer(parts).run_until_idle()
        state = await _source(client, owner, git_source)
        assert state["state"] == "failing" and "git.rebind.test" in state["last_error"], state
        assert "private, loopback or link-local" in state["last_error"]
        assert repository.requests == 0

    answered[0] = 0
    port = s3_endpoint.rsplit(":", 1)[1]
    s3 = {"bucket": BUCKET, "endpoint_url": f"http://s3.rebind.test:{port}"}
    secrets = {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY}
    body = {"name": "Bucket", "kind": "s3", "settings": s3, "secrets": secrets}
    s3_source = await _add(client, owner, collection, body)
    await SourceSyncer(parts).run_until_idle()
    state = await _source(client, owner, s3_source)
    assert state["state"] == "failing", state
    assert "private, loopback or link-local" in state["last_error"], state


async def test_a_website_crawled_below_its_folder_honouring_robots_txt(
    served: Client, session: AsyncSession
) -> None:
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Intranet")
    site = DocsSite(robots="User-agent: *\nDisallow: /docs/private/\n")
    try:
        site.pages["/docs/ferry.html"] = (
            b"<html><body><h1>Ferry</h1><p>The island ferry leaves at nine.</p></body></html>",
            "text/html",
        )
        site.pages["/docs/report.pdf"] = (
            make_pdf(["The ferry carried 1.2 million passengers last year."]),
            "application/pdf",
        )
        site.pages["/docs/private/salaries.html"] = (b"<p>secret</p>", "text/html")
        site.pages["/elsewhere.html"] = (b"<p>outside the folder</p>", "text/html")
        site.broken.add("/docs/flaky.html")
        body = {"name": "Intranet", "kind": "website", "settings": {"url": f"{site.base}/docs/"}}
        made = await client.post(
            f"/api/v1/collections/{collection}/sources", headers=owner, json=body
        )
        assert made.status_code == 201, made.text
        source = made.json()["id"]
        await _sync(parts)
        state = await _source(client, owner, source)
        assert state["progress"]["added"] == 3 and state["progress"]["failed"] == 1, state
        items = (await client.get(f"/api/v1/sources/{source}/items", headers=owner)).json()
        keys = {item["key"]: item["error"] for item in items["items"]}
        assert set(keys) == {"./", "ferry.html", "report.pdf", "flaky.html"}
        assert "500" in (keys["flaky.html"] or ""), keys
        names = await _names(client, owner, collection)
        assert "salaries.html" not in names and "elsewhere.html" not in names

        # The PDF is taken down, the flaky page recovers: the next sync follows.
        del site.pages["/docs/report.pdf"]
        site.broken.discard("/docs/flaky.html")
        site.pages["/docs/flaky.html"] = (b"<p>Back again.</p>", "text/html")
        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await _sync(parts)
        progress = (await _source(client, owner, source))["progress"]
        assert progress["removed"] == 1 and progress["failed"] == 0, progress
        names = await _names(client, owner, collection)
        assert "report.pdf" not in names and "flaky.html" in names
    finally:
        site.stop()


async def test_a_sitemap_past_its_bounds_fails_the_sync_saying_which(
    served: Client, session: AsyncSession
) -> None:
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Sitemap")
    site = DocsSite()
    try:
        for index in range(60):  # a sitemap of about 3 KB and 60 entries
            site.pages[f"/docs/page-{index}.html"] = (b"<p>A page.</p>", "text/html")
        body = {
            "name": "Site",
            "kind": "website",
            "settings": {"url": f"{site.base}/docs/sitemap.xml"},
        }
        source = await _add(client, owner, collection, body)
        await SourceSyncer(_bounded(parts, sitemap_max_bytes=2048)).run_until_idle()
        state = await _source(client, owner, source)
        assert state["state"] == "failing", state
        assert "larger than 2,048 bytes (SOURCES_SITEMAP_MAX_BYTES)" in state["last_error"]

        await client.post(f"/api/v1/sources/{source}/sync", headers=owner)
        await SourceSyncer(_bounded(parts, sitemap_max_entries=50)).run_until_idle()
        state = await _source(client, owner, source)
        assert "more than 50 entries (SOURCES_SITEMAP_MAX_ENTRIES)" in state["last_error"]
        assert await _names(client, owner, collection) == []
    finally:
        site.stop()


def test_an_s3_source_without_keys_never_signs_with_the_servers_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from botocore import UNSIGNED

    from docchat.sources.port import SOURCES

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "the-servers-own-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-servers-own-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9/the-servers-bucket-host")
    anonymous: Any = SOURCES.get("s3")({"bucket": "public-data"})
    assert anonymous._client.meta.config.signature_version is UNSIGNED
    assert "127.0.0.1:9" not in anonymous._client.meta.endpoint_url
    keyed: Any = SOURCES.get("s3")(
        {"bucket": "b", "access_key_id": "given", "secret_access_key": "given-secret"}
    )
    credentials = keyed._client._request_signer._credentials
    assert credentials.access_key == "given"


async def test_only_the_sources_author_retargets_it_and_its_credentials_stay_behind(
    served: Client, session: AsyncSession, s3_endpoint: str
) -> None:
    client, _ = served
    author, co_owner = await auth_headers(client), await auth_headers(client)
    collection = await _collection(client, author, "Shared bucket")
    await invite(client, author, collection, co_owner, role="owner")
    body = {
        "name": "B",
        "kind": "s3",
        "settings": {"bucket": "one", "endpoint_url": s3_endpoint},
        "secrets": {"access_key_id": ACCESS_KEY_ID, "secret_access_key": SECRET_ACCESS_KEY},
    }
    made = await client.post(f"/api/v1/collections/{collection}/sources", headers=author, json=body)
    source = made.json()["id"]
    other = {"settings": {"bucket": "another", "endpoint_url": s3_endpoint}}
    refused = await client.patch(f"/api/v1/sources/{source}", headers=co_owner, json=other)
    assert refused.status_code == 403
    renamed = await client.patch(f"/api/v1/sources/{source}", headers=co_owner, json={"name": "C"})
    assert renamed.status_code == 200 and renamed.json()["has_secrets"] is True
    moved = await client.patch(f"/api/v1/sources/{source}", headers=author, json=other)
    assert moved.status_code == 200 and moved.json()["has_secrets"] is False
    bad_region = {"settings": {"bucket": "b", "region": "not a region!"}}
    refused = await client.patch(f"/api/v1/sources/{source}", headers=author, json=bad_region)
    assert refused.status_code == 422, refused.text


async def test_a_source_that_suddenly_lists_nothing_removes_nothing(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Share")
    folder = tmp_path / "shared" / "share"
    _write(folder, "a.md", HANDBOOK)
    source = (await _add_folder(client, admin, collection, "Share", folder)).json()["id"]
    await _sync(parts)
    (folder / "a.md").unlink()  # the share unmounted, say
    await client.post(f"/api/v1/sources/{source}/sync", headers=admin)
    await _sync(parts)
    state = await _source(client, admin, source)
    assert state["state"] == "failing" and "nothing was removed" in state["last_error"]
    assert await _names(client, admin, collection) == ["a.md"]


async def test_a_source_is_not_synced_for_someone_no_longer_an_owner_nor_claimed_twice(
    served: Client, session: AsyncSession, s3_endpoint: str
) -> None:
    client, parts = served
    owner, author = await auth_headers(client), await auth_headers(client)
    collection = await _collection(client, owner, "Team")
    await invite(client, owner, collection, author, role="owner")
    members = await client.get(f"/api/v1/collections/{collection}/members", headers=owner)
    author_email = (await client.get("/api/v1/users/me", headers=author)).json()["email"]
    member = next(m for m in members.json() if m["email"] == author_email)
    body = {"name": "B", "kind": "s3", "settings": {"bucket": "x", "endpoint_url": s3_endpoint}}
    made = await client.post(f"/api/v1/collections/{collection}/sources", headers=author, json=body)
    assert made.status_code == 201, made.text
    first = SourceSyncer(parts)
    claim = await first.claims.claim()
    assert claim is not None
    assert await SourceSyncer(parts).run_once() is False, "held by the first worker"
    await first._finish_failing(claim, "test")
    demoted = await client.patch(
        f"/api/v1/collections/{collection}/members/{member['id']}",
        headers=owner,
        json={"role": "viewer"},
    )
    assert demoted.status_code == 200, demoted.text
    await session.execute(
        update(Source)
        .where(Source.id == uuid.UUID(made.json()["id"]))
        .values(next_sync_at=utcnow())
    )
    await session.commit()
    assert await SourceSyncer(parts).run_once() is False


async def test_an_accounts_deletion_hands_its_sources_over_paused_or_removes_their_caches(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    client, parts = served
    admin = await admin_headers(client, session)
    leaver, heir = await auth_headers(client), await auth_headers(client)
    shared = await _collection(client, leaver, "Shared docs")
    await invite(client, leaver, shared, heir)
    alone = await _collection(client, leaver, "Mine")
    with git_server(tmp_path / "docs.git") as (url, repository):
        repository.commit({"docs/a.md": HANDBOOK})
        sources = {}
        for collection in (shared, alone):
            body = {"name": "Docs", "kind": "git", "settings": {"url": url, "folder": "docs"}}
            made = await client.post(
                f"/api/v1/collections/{collection}/sources", headers=leaver, json=body
            )
            assert made.status_code == 201, made.text
            sources[collection] = made.json()["id"]
        await _sync(parts)
    caches = {
        collection: parts.settings.data_dir / "sources" / uuid.UUID(source).hex
        for collection, source in sources.items()
    }
    assert all(cache.is_dir() for cache in caches.values())
    leaver_id = (await client.get("/api/v1/users/me", headers=leaver)).json()["id"]
    heir_id = (await client.get("/api/v1/users/me", headers=heir)).json()["id"]
    deleted = await client.delete(
        f"/api/v1/admin/users/{leaver_id}",
        headers=admin,
        params={"others_documents": "transfer", "transfer_to": heir_id},
    )
    assert deleted.status_code == 204, deleted.text
    handed = await _source(client, heir, sources[shared])
    assert handed["owner_id"] == heir_id and handed["state"] == "paused"
    assert "check its settings" in handed["last_error"]
    assert caches[shared].is_dir()
    assert await session.get(Source, uuid.UUID(sources[alone])) is None
    assert not caches[alone].exists()


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (PermissionError(13, "Permission denied"), "Permission denied"),
        (RuntimeError("bug"), "unexpectedly"),
    ],
)
async def test_a_sync_that_breaks_says_so_and_backs_off_instead_of_hanging(
    served: Client,
    session: AsyncSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
    said: str,
) -> None:
    from docchat.sources.folder import FolderSource

    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Locked")
    folder = tmp_path / "shared" / "locked"
    _write(folder, "a.md", HANDBOOK)
    source = (await _add_folder(client, admin, collection, "Locked", folder)).json()["id"]

    def broken(self: FolderSource) -> list[Any]:
        raise failure

    monkeypatch.setattr(FolderSource, "_listing", broken)
    await _sync(parts)
    state = await _source(client, admin, source)
    assert state["state"] == "failing" and said in state["last_error"], state
    assert state["next_sync_at"] is not None


async def test_the_kinds_and_their_settings_come_from_what_each_kind_declares(
    served: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind registered with its declaration is listed, its settings checked and its address
    refused on a private network, with nothing else to edit (the web app's form reads the
    list)."""
    client, _ = served
    owner = await auth_headers(client)
    kinds = (await client.get("/api/v1/sources/kinds", headers=owner)).json()
    assert [kind["kind"] for kind in kinds] == SOURCES.names()
    s3 = next(kind for kind in kinds if kind["kind"] == "s3")
    assert [s["name"] for s in s3["settings"] if s["address"]] == ["endpoint_url"]
    assert [s["name"] for s in s3["settings"] if s["secret"]] == [
        "access_key_id",
        "secret_access_key",
    ]
    assert next(kind for kind in kinds if kind["kind"] == "folder")["administrators_only"]

    monkeypatch.setitem(SOURCES._entries, "wiki", FAKE)
    kinds = (await client.get("/api/v1/sources/kinds", headers=owner)).json()
    wiki = next(kind for kind in kinds if kind["kind"] == "wiki")
    assert wiki["label"] == "A wiki" and wiki["settings"][0]["name"] == "server"
    url = f"/api/v1/collections/{await _collection(client, owner, 'Wiki')}/sources"
    body: dict[str, Any] = {"name": "W", "kind": "wiki", "settings": {"space": "HR"}}
    refused = await client.post(url, headers=owner, json=body)
    assert refused.status_code == 422 and "'server'" in refused.json()["detail"]
    body["settings"] = {"server": "http://10.1.2.3:8080/"}
    refused = await client.post(url, headers=owner, json=body)
    assert refused.status_code == 400 and "URL_FETCH_ALLOWED_HOSTS" in refused.json()["detail"]
    body["settings"] = {"server": "http://127.0.0.1:9/"}  # allowed in these tests
    assert (await client.post(url, headers=owner, json=body)).status_code == 201
    unknown = await client.post(url, headers=owner, json={**body, "kind": "ftp"})
    assert unknown.status_code == 422 and "ftp" in unknown.json()["detail"]


def _dated(path: Path, day: str) -> None:
    """Give the file at `path` a modification time on `day` (noon, UTC)."""
    moment = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    os.utime(path, (moment, moment))


async def _dates(client: httpx.AsyncClient, headers: dict[str, str], collection: str) -> Any:
    listed = await client.get(f"/api/v1/collections/{collection}/documents", headers=headers)
    return {d["filename"]: (d["document_date"], d["version"]) for d in listed.json()["items"]}


async def test_synced_documents_are_dated_by_their_file_else_by_their_source(
    served: Client, session: AsyncSession, tmp_path: Path
) -> None:
    """A file's own date first (a PDF's metadata), else the day the folder says it last
    changed; a changed file's new version takes the new day."""
    client, parts = served
    admin = await admin_headers(client, session)
    collection = await _collection(client, admin, "Dated")
    folder = tmp_path / "shared" / "dated"
    _write(folder, "handbook.md", HANDBOOK)
    _dated(folder / "handbook.md", "2023-04-01")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([FERRY.decode()]))))
    writer.metadata = {"/CreationDate": "D:20210615120000Z"}
    out = io.BytesIO()
    writer.write(out)
    _write(folder, "ferry.pdf", out.getvalue())
    _dated(folder / "ferry.pdf", "2023-04-01")
    made = await _add_folder(client, admin, collection, "Dated share", folder)
    assert made.status_code == 201, made.text
    await _sync(parts)
    assert await _dates(client, admin, collection) == {
        "handbook.md": ("2023-04-01", 1),
        "ferry.pdf": ("2021-06-15", 1),
    }

    _write(folder, "handbook.md", HANDBOOK.replace(b"25", b"30"))
    _dated(folder / "handbook.md", "2024-05-06")
    await client.post(f"/api/v1/sources/{made.json()['id']}/sync", headers=admin)
    await _sync(parts)
    assert (await _dates(client, admin, collection))["handbook.md"] == ("2024-05-06", 2)


async def test_a_sitemaps_lastmod_dates_its_pages(served: Client) -> None:
    client, parts = served
    owner = await auth_headers(client)
    collection = await _collection(client, owner, "Dated site")
    site = DocsSite()
    try:
        site.pages["/docs/ferry.txt"] = (FERRY, "text/plain")
        site.lastmod["/docs/ferry.txt"] = "2023-04-01T09:30:00+02:00"
        settings = {"url": f"{site.base}/docs/sitemap.xml"}
        body = {"name": "Site", "kind": "website", "settings": settings}
        made = await client.post(
            f"/api/v1/collections/{collection}/sources", headers=owner, json=body
        )
        assert made.status_code == 201, made.text
        await _sync(parts)
        assert await _dates(client, owner, collection) == {"ferry.txt": ("2023-04-01", 1)}
    finally:
        site.stop()
