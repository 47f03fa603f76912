"""Uploaded files in an S3-compatible bucket: upload, ingestion, answers, download, deletion.

The bucket is served over HTTP on loopback by moto's S3 server (an implementation of the S3
REST API), so boto3's real path runs: request signing, multipart-capable transfers, errors.
The API and the worker here share no folder for files: the worker reads the object.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from docchat.config import StorageSettings
from docchat.documents.storage import LocalFileStorage, S3FileStorage, build_storage
from docchat.ingestion.worker import IngestionWorker
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload, upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.s3_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    bucket_client,
    empty_and_remove,
    s3_server,
)
from tests.support.users import auth_headers

BUCKET = "docchat-files"
NOTE = b"The Northwind ferry leaves the harbour at seven and returns at noon."


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as endpoint:
        yield endpoint


def s3_settings(endpoint: str) -> StorageSettings:
    return StorageSettings(
        _env_file=None,  # type: ignore[call-arg]
        s3_bucket=BUCKET,
        s3_endpoint_url=endpoint,
        s3_access_key_id=ACCESS_KEY_ID,
        s3_secret_access_key=SECRET_ACCESS_KEY,  # type: ignore[arg-type]
    )


@pytest.fixture
def bucket(s3_endpoint: str) -> Any:
    client = bucket_client(s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    yield client
    empty_and_remove(client, BUCKET)


@pytest.fixture
def s3_components(components: Components, s3_endpoint: str, tmp_path: Path) -> Components:
    storage = S3FileStorage(s3_settings(s3_endpoint), tmp_path / "staging")
    return dataclasses.replace(components, storage=storage)


@pytest_asyncio.fixture
async def s3_client(
    settings: Any, s3_components: Components, bucket: Any
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, run_worker=False)
    attach_components(app, s3_components)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client


def object_keys(bucket: Any) -> list[str]:
    return [found["Key"] for found in bucket.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


async def test_a_file_in_the_bucket_is_read_answered_from_downloaded_and_deleted(
    s3_client: httpx.AsyncClient,
    s3_components: Components,
    bucket: Any,
    fresh_llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    headers = await auth_headers(s3_client)
    content = NOTE + f" ({uuid.uuid4()})".encode()
    digest = hashlib.sha256(content).hexdigest()
    document = await upload_and_process(s3_client, s3_components, headers, "ferry.txt", content)
    assert document["status"] == "completed" and document["chunk_count"] >= 1
    assert object_keys(bucket) == [f"files/{digest[:2]}/{digest}"]
    staged = tmp_path / "staging"
    assert not staged.exists() or not any(staged.iterdir())  # no copy left behind

    fresh_llm.script("It leaves at seven [1].")
    answer = await ask(s3_client, headers, "When does the Northwind ferry leave?")
    assert answer.status_code == 200, answer.text
    sources = answer.json()["assistant_message"]["sources"]
    assert [source["document_name"] for source in sources] == ["ferry.txt"]

    downloaded = await s3_client.get(f"/api/v1/documents/{document['id']}/file", headers=headers)
    assert downloaded.status_code == 200 and downloaded.content == content
    assert downloaded.headers["content-type"].startswith("text/plain")
    assert not any(staged.iterdir())  # the copy sent was removed

    deleted = await s3_client.delete(f"/api/v1/documents/{document['id']}", headers=headers)
    assert deleted.status_code == 204
    assert object_keys(bucket) == []


async def test_an_object_gone_from_the_bucket_fails_the_document_and_is_a_404(
    s3_client: httpx.AsyncClient, s3_components: Components, bucket: Any
) -> None:
    headers = await auth_headers(s3_client)
    response = await upload(s3_client, headers, "lost.txt", NOTE + f" {uuid.uuid4()}".encode())
    assert response.status_code == 202
    for key in object_keys(bucket):
        bucket.delete_object(Bucket=BUCKET, Key=key)
    await IngestionWorker(s3_components).run_until_idle()
    read = await s3_client.get(f"/api/v1/documents/{response.json()['id']}", headers=headers)
    document = read.json()
    assert document["status"] == "failed"
    assert "missing from storage" in document["error"]
    missing = await s3_client.get(f"/api/v1/documents/{document['id']}/file", headers=headers)
    assert missing.status_code == 404
    assert missing.json() == {"detail": "The stored file is missing"}


def test_the_bucket_setting_chooses_the_storage_and_empty_values_count_as_unset(
    tmp_path: Path,
) -> None:
    unset = StorageSettings(_env_file=None, s3_bucket="")  # type: ignore[call-arg]
    assert isinstance(build_storage(unset, tmp_path), LocalFileStorage)
    # As `${STORAGE_S3_ENDPOINT_URL:-}` in the compose file passes them: AWS's own endpoint.
    chosen = StorageSettings(
        _env_file=None,  # type: ignore[call-arg]
        s3_bucket=BUCKET,
        s3_endpoint_url="",
        s3_access_key_id="",
        s3_secret_access_key="",  # type: ignore[arg-type]
    )
    storage = build_storage(chosen, tmp_path)
    assert isinstance(storage, S3FileStorage)
    assert storage.staging == tmp_path / ".staging"


async def test_a_document_still_queued_is_read_from_the_bucket_to_answer(
    s3_client: httpx.AsyncClient, fresh_llm: ScriptedLLM, tmp_path: Path
) -> None:
    headers = await auth_headers(s3_client)
    uploaded = await upload(s3_client, headers, "ferry.txt", NOTE + f" {uuid.uuid4()}".encode())
    document = uploaded.json()
    assert document["status"] == "queued"  # no worker has run
    fresh_llm.script("At seven [1].")
    answer = await ask(
        s3_client, headers, "When does the ferry leave?", document_ids=[document["id"]]
    )
    assert answer.status_code == 200, answer.text
    message = answer.json()["assistant_message"]
    assert message["meta"]["inline_documents"] == 1
    assert [source["document_name"] for source in message["sources"]] == ["ferry.txt"]
    assert "leaves the harbour at seven" in fresh_llm.prompt_text()
    staged = tmp_path / "staging"
    assert not staged.exists() or not any(staged.iterdir())  # the copy read was removed


async def _ranges_are_served(client: httpx.AsyncClient, headers: dict[str, str]) -> bytes:
    """A file of a few pieces of the streaming size, downloaded whole and by ranges as the PDF
    viewer asks for them; returns the file."""
    content = (NOTE * 25_000)[:1_500_000] + str(uuid.uuid4()).encode()  # under the 2 MB limit
    uploaded = await upload(client, headers, "ferry log.txt", content)
    assert uploaded.status_code == 202
    url = f"/api/v1/documents/{uploaded.json()['id']}/file"
    whole = await client.get(url, headers=headers)
    assert whole.status_code == 200 and whole.content == content
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["content-length"] == str(len(content))
    assert whole.headers["content-disposition"] == "inline; filename*=utf-8''ferry%20log.txt"
    size = len(content)
    for asked, first, last in [
        ("bytes=4-11", 4, 11),
        ("bytes=1048570-1048590", 1048570, 1048590),  # across two streamed pieces
        ("bytes=1400000-", 1400000, size - 1),
        ("bytes=-5", size - 5, size - 1),
        (f"bytes=10-{size + 99}", 10, size - 1),  # an end past the file is the last byte
    ]:
        part = await client.get(url, headers={**headers, "Range": asked})
        assert part.status_code == 206, (asked, part.status_code)
        assert part.content == content[first : last + 1], asked
        assert part.headers["content-range"] == f"bytes {first}-{last}/{size}"
        assert part.headers["content-length"] == str(last - first + 1)
    past = await client.get(url, headers={**headers, "Range": f"bytes={size}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{size}"
    return content


async def test_a_file_in_the_bucket_is_streamed_whole_or_by_byte_ranges(
    s3_client: httpx.AsyncClient, s3_components: Components, tmp_path: Path, bucket: Any
) -> None:
    headers = await auth_headers(s3_client)
    asked: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.append(params.get("Range", "whole"))

    storage = s3_components.storage
    assert isinstance(storage, S3FileStorage)
    storage._client.meta.events.register("provide-client-params.s3.GetObject", record)
    content = await _ranges_are_served(s3_client, headers)
    size = len(content)
    # The bucket is asked for what the client asked for, not for the whole object each time.
    assert asked == [
        f"bytes=0-{size - 1}",
        "bytes=4-11",
        "bytes=1048570-1048590",
        f"bytes=1400000-{size - 1}",
        f"bytes={size - 5}-{size - 1}",
        f"bytes=10-{size - 1}",
    ]
    staged = tmp_path / "staging"
    assert not staged.exists() or not any(staged.iterdir())  # streamed: nothing staged
    # Several ranges at once: the whole file, as a server may answer them.
    [key] = object_keys(bucket)
    document = (await s3_client.get("/api/v1/documents", headers=headers)).json()["items"][0]
    url = f"/api/v1/documents/{document['id']}/file"
    several = await s3_client.get(url, headers={**headers, "Range": "bytes=0-1,5-9"})
    assert several.status_code == 200 and len(several.content) == document["size_bytes"]
    assert key.endswith(hashlib.sha256(several.content).hexdigest())


async def test_a_file_in_a_folder_serves_byte_ranges_the_same_way(
    client: httpx.AsyncClient,
) -> None:
    await _ranges_are_served(client, await auth_headers(client))
