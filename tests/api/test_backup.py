"""`docchat backup` and `docchat restore`, as an administrator runs them: an installation is
filled, backed up while it answers questions, restored elsewhere and asked again."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import text

from docchat.config import PROJECT_ROOT, Settings
from docchat.db import create_engine
from docchat.main import backup, doctor
from tests.api.test_collections import invite
from tests.api.test_s3_storage import BUCKET, bucket, s3_endpoint, s3_settings  # noqa: F401
from tests.support import glossary
from tests.support.chat import ask
from tests.support.database import alembic, create_database, drop_database
from tests.support.files import make_pdf
from tests.support.live_server import LiveServer
from tests.support.office_files import make_docx
from tests.support.users import auth_headers

DOCUMENTS: dict[str, bytes] = {
    "ferry.txt": b"The island ferry leaves the harbour at nine and returns at six.",
    "garden.md": b"# Garden\n\nThe community garden keeps its tools in the blue shed.",
    "lab.pdf": make_pdf(["The laboratory freezer holds samples at minus eighty degrees."]),
    "policy.docx": make_docx([(1, "Leave", ["Employees take twenty-five days of leave a year."])]),
    "rota.csv": b"day,cook\nMonday,Ines\nTuesday,Tomas\n",
}
QUESTIONS = {
    "When does the island ferry leave the harbour?": "ferry.txt",
    "Where does the community garden keep its tools?": "garden.md",
    "At what temperature does the laboratory freezer hold samples?": "lab.pdf",
    "How many days of leave do employees take?": "policy.docx",
}


@dataclass
class Installation:
    settings: Settings
    env: dict[str, str]


async def installation(
    base: Settings, root: Path, *, migrated: bool, glossary_file: Path
) -> Installation:
    url = await create_database("docchat_backup")
    if migrated:
        await alembic(url, "upgrade", "head")
    data = glossary.seed(glossary_file, root / url.rsplit("/", 1)[1])
    # No AUTH_SECRET_KEY: the key is generated in the data folder and travels in the archive.
    auth = base.auth.model_copy(update={"secret_key": None})
    worker = base.worker.model_copy(update={"enabled": True, "poll_seconds": 0.2})
    settings = base.model_copy(
        update={"database_url": url, "data_dir": data, "auth": auth, "worker": worker}
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT / "backend"),
        "DATABASE_URL": url,
        "DATA_DIR": str(data),
        "ENVIRONMENT": "test",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("AUTH_SECRET_KEY", None)
    return Installation(settings, env)


def docchat(installation: Installation, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "docchat.main.cli", *args]
    return subprocess.run(  # noqa: S603 - this project's own command
        command, env=installation.env, capture_output=True, text=True, timeout=300
    )


async def tables_in(installation: Installation) -> int:
    engine = create_engine(installation.settings.database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(
                text("SELECT count(*) FROM information_schema.tables WHERE table_schema='public'")
            )
    finally:
        await engine.dispose()
    return int(count or 0)


async def completed(client: httpx.AsyncClient, headers: dict[str, str], count: int) -> list[Any]:
    """The caller's documents once `count` of them are completed (the worker reads them)."""
    for _ in range(600):
        listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
        if sum(document["status"] == "completed" for document in listed) >= count:
            return list(listed)
        await asyncio.sleep(0.2)
    raise AssertionError(f"documents never completed: {[d['status'] for d in listed]}")


def cited(answer: httpx.Response) -> list[tuple[str, int | None, str | None]]:
    assert answer.status_code == 200, answer.text
    sources = answer.json()["assistant_message"]["sources"] or []
    return [(s["document_name"], s["page"], s["location"]) for s in sources]


@pytest_asyncio.fixture
async def installations(
    settings: Settings, tmp_path: Path, compiled_glossary: Path
) -> AsyncIterator[list[Installation]]:
    made: list[Installation] = []

    async def make(migrated: bool) -> Installation:
        made.append(
            await installation(
                settings, tmp_path, migrated=migrated, glossary_file=compiled_glossary
            )
        )
        return made[-1]

    yield make  # type: ignore[misc]
    for each in made:
        await drop_database(each.settings.database_url)


async def test_a_backup_taken_while_answering_restores_everything_elsewhere(
    installations: Any, tmp_path: Path
) -> None:
    source: Installation = await installations(True)
    target: Installation = await installations(False)
    archive = tmp_path / "nightly.tar"

    live = LiveServer(source.settings).start()
    try:
        async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
            alice = await auth_headers(client)
            bob = await auth_headers(client)
            for name, content in DOCUMENTS.items():
                response = await client.post(
                    "/api/v1/documents", headers=alice, files={"file": (name, content)}
                )
                assert response.status_code == 202, response.text
            documents = await completed(client, alice, len(DOCUMENTS))
            shared = (
                await client.post("/api/v1/collections", headers=alice, json={"name": "Team"})
            ).json()
            ferry = next(d for d in documents if d["filename"] == "ferry.txt")
            await client.put(
                f"/api/v1/collections/{shared['id']}/documents/{ferry['id']}", headers=alice
            )
            await invite(client, alice, shared["id"], bob)
            key = (
                await client.post(
                    "/api/v1/api-keys", headers=alice, json={"name": "phone", "scopes": ["read"]}
                )
            ).json()["secret"]
            before = {q: cited(await ask(client, alice, q)) for q in QUESTIONS}
            for question, filename in QUESTIONS.items():
                assert before[question] and before[question][0][0] == filename, before

            # The backup runs while people keep asking.
            backing_up = asyncio.create_task(
                asyncio.to_thread(docchat, source, "backup", str(archive))
            )
            asked_meanwhile = 0
            while not backing_up.done():
                cited(await ask(client, bob, "When does the island ferry leave the harbour?"))
                asked_meanwhile += 1
            taken = await backing_up
            assert taken.returncode == 0, taken.stderr
            assert asked_meanwhile > 0
            chats_before = (await client.get("/api/v1/chats", headers=alice)).json()
    finally:
        live.stop()

    restored = docchat(target, "restore", str(archive))
    assert restored.returncode == 0, restored.stderr
    assert f"queued {len(DOCUMENTS)} documents" in restored.stdout
    assert (target.settings.data_dir / "secret_key").read_bytes() == (
        source.settings.data_dir / "secret_key"
    ).read_bytes()

    live = LiveServer(target.settings).start()
    try:
        async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
            # Sessions signed before the backup still work: the signing key came with it.
            await completed(client, alice, len(DOCUMENTS))
            after = {q: cited(await ask(client, alice, q)) for q in QUESTIONS}
            assert after == before
            chats_after = (await client.get("/api/v1/chats", headers=alice)).json()
            # Her chats are all there (and the new questions' chats besides).
            assert {c["id"] for c in chats_before["items"]} <= {
                c["id"] for c in chats_after["items"]
            }
            listed = await client.get(
                "/api/v1/documents", headers={"Authorization": f"Bearer {key}"}
            )
            assert listed.status_code == 200
            assert {d["filename"] for d in listed.json()["items"]} == set(DOCUMENTS)
            download = await client.get(f"/api/v1/documents/{ferry['id']}/file", headers=alice)
            assert download.content == DOCUMENTS["ferry.txt"]
            # Bob still reads the shared collection.
            assert cited(await ask(client, bob, "When does the island ferry leave the harbour?"))
    finally:
        live.stop()


async def test_a_damaged_archive_or_a_live_target_is_refused_and_nothing_restored(
    installations: Any, tmp_path: Path
) -> None:
    source: Installation = await installations(True)
    empty: Installation = await installations(False)
    archive = tmp_path / "full.tar"
    taken = docchat(source, "backup", str(archive))
    assert taken.returncode == 0, taken.stderr

    cut = tmp_path / "cut.tar"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    refused = docchat(empty, "restore", str(cut))
    assert refused.returncode != 0
    assert "the archive is damaged, nothing was restored" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert await tables_in(empty) == 0

    # The source itself is a live installation: restore will not write over it.
    over = docchat(source, "restore", str(archive))
    assert over.returncode != 0
    assert "the target is in use" in over.stderr and "--overwrite" in over.stderr


def test_an_archive_whose_file_names_climb_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    """A file member must be named by its content address: `../` never reaches the disk."""
    body = b"payload"
    digest = hashlib.sha256(body).hexdigest()
    dump = b"not really a dump"
    name = f"files/{digest[:2]}/../../../escaped/{digest}"
    manifest = backup.Manifest(
        created_at="2026-11-26T00:00:00+00:00",
        revision=doctor.alembic_head() or "",
        embedding_model="all-MiniLM-L6-v2",
        storage="folder",
        key_in_archive=False,
        members={
            backup.DUMP: {"size": len(dump), "sha256": hashlib.sha256(dump).hexdigest()},
            name: {"size": len(body)},
        },
    )
    hostile = tmp_path / "hostile.tar"
    with tarfile.open(hostile, "w") as archive:
        for member, data in (
            (backup.MANIFEST, manifest.to_json()),
            (backup.DUMP, dump),
            (name, body),
        ):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    with pytest.raises(backup.DamagedArchive, match="is not the name of a stored file"):
        backup.verify(hostile)


async def test_a_bucket_installation_is_archived_by_its_object_list(
    installations: Any,
    tmp_path: Path,
    s3_endpoint: str,  # noqa: F811 - the fixture of test_s3_storage
    bucket: Any,  # noqa: F811
) -> None:
    """With an S3 bucket the objects stay where they are: the archive lists them, and restore
    says which ones are not in the bucket."""
    storage = s3_settings(s3_endpoint)
    source: Installation = await installations(True)
    source.settings = source.settings.model_copy(update={"storage": storage})
    live = LiveServer(source.settings).start()
    try:
        async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
            alice = await auth_headers(client)
            posted = await client.post(
                "/api/v1/documents",
                headers=alice,
                files={"file": ("ferry.txt", DOCUMENTS["ferry.txt"])},
            )
            assert posted.status_code == 202, posted.text
            await completed(client, alice, 1)
    finally:
        live.stop()
    archive = tmp_path / "bucket.tar"
    summary = await backup.backup(source.settings, archive)
    manifest = backup.verify(archive)
    assert manifest.storage == "bucket" and summary.documents_files == 1
    (key,) = manifest.bucket_objects
    assert not [name for name in manifest.members if name.startswith(backup.FILES)]

    target: Installation = await installations(False)
    target.settings = target.settings.model_copy(update={"storage": storage})
    restored = await backup.restore(target.settings, archive)
    assert restored.missing_objects == [] and await tables_in(target) > 0

    # The bucket lost the object since: the next restore says so.
    bucket.delete_object(Bucket=BUCKET, Key=f"{storage.s3_prefix}{key}")
    again: Installation = await installations(False)
    again.settings = again.settings.model_copy(update={"storage": storage})
    assert (await backup.restore(again.settings, archive)).missing_objects == [key]

    # A bucket's archive does not restore into a folder installation.
    folder: Installation = await installations(False)
    with pytest.raises(backup.BackupError, match="in a bucket, and this installation keeps"):
        await backup.restore(folder.settings, archive)
    assert await tables_in(folder) == 0
