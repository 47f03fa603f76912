"""More than one process, as a team would deploy it: two API processes and two worker processes
of their own, sharing PostgreSQL, a Chroma server (`chroma run`), an S3 server for the uploaded
files, and one data folder (the shared volume that holds the generated signing key). A worker
killed mid-document and an API process killed mid-answer lose nothing and answer nothing twice."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.documents.models import DocumentStatus
from tests.support import glossary
from tests.support.documents import document_and_job, wait_for_document
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.processes import (
    Process,
    docchat_env,
    start_api,
    start_chroma,
    start_worker,
    wait_for,
)
from tests.support.s3_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    bucket_client,
    s3_server,
)
from tests.support.users import PASSWORD

FAQ = "Visitors to the Harbour archive must book the reading room two days ahead."
MARKER = "two days ahead"
BUCKET = "docchat-cluster"


@dataclass
class Cluster:
    processes: dict[str, Process]
    shared: Path
    bucket: Any  # boto3's S3 client on the test's S3 server


@pytest.fixture(scope="module")
def cluster(
    database_url: str,
    scripted_llm: ScriptedLLM,
    tmp_path_factory: pytest.TempPathFactory,
    compiled_glossary: Path,
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    logs = root / "logs"
    logs.mkdir()
    chroma = start_chroma(root / "chroma", logs)
    shared = glossary.seed(compiled_glossary, root / "shared-volume")
    with s3_server() as endpoint:
        bucket = bucket_client(endpoint)
        bucket.create_bucket(Bucket=BUCKET)
        # No AUTH_SECRET_KEY: the processes agree on the key generated in the shared data folder.
        env = docchat_env(
            DATABASE_URL=database_url,
            DATA_DIR=str(shared),
            CHROMA_URL=str(chroma.url),
            LLM_BASE_URL=scripted_llm.base_url,
            LLM_MODEL="scripted-model",
            ANSWER_PROGRESS_SECONDS="0.2",
            STORAGE_S3_BUCKET=BUCKET,
            STORAGE_S3_ENDPOINT_URL=endpoint,
            STORAGE_S3_ACCESS_KEY_ID=ACCESS_KEY_ID,
            STORAGE_S3_SECRET_ACCESS_KEY=SECRET_ACCESS_KEY,
            # A killed worker's job is taken again within seconds, not the default half minute.
            WORKER_HEARTBEAT_SECONDS="1",
            WORKER_STALE_AFTER_SECONDS="4",
        )
        processes: dict[str, Process] = {
            "chroma": chroma,
            "api1": start_api("api1", env, logs),
            "api2": start_api("api2", env, logs),
            "worker1": start_worker("worker1", env, logs),
            "worker2": start_worker("worker2", env, logs),
        }
        try:
            for name in ("api1", "api2"):
                wait_for(processes[name], f"{processes[name].url}/readyz")
            yield Cluster(processes, shared, bucket)
        finally:
            for process in processes.values():
                process.stop()


def _workers_output(cluster: Cluster) -> str:
    return "\n".join(cluster.processes[name].output() for name in ("worker1", "worker2"))


def _token(api: str, email: str) -> dict[str, str]:
    response = httpx.post(
        f"{api}/api/v1/auth/login", data={"username": email, "password": PASSWORD}, timeout=30
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def _ask(api: str, headers: dict[str, str], question: str) -> dict[str, object]:
    response = httpx.post(
        f"{api}/api/v1/messages", headers=headers, json={"content": question}, timeout=60
    )
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()["assistant_message"]
    return answer


def _stored_copies(bucket: Any) -> int:
    """How many files in the bucket hold the FAQ."""
    listed = bucket.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    bodies = (bucket.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read() for item in listed)
    return sum(body == FAQ.encode() for body in bodies)


def test_upload_ask_and_delete_across_two_api_processes_and_two_workers(
    cluster: Cluster, scripted_llm: ScriptedLLM
) -> None:
    processes = cluster.processes
    api1, api2 = str(processes["api1"].url), str(processes["api2"].url)
    email = f"team-{uuid.uuid4().hex[:8]}@example.com"
    registered = httpx.post(
        f"{api1}/api/v1/auth/register", json={"email": email, "password": PASSWORD}, timeout=30
    )
    assert registered.status_code == 201
    # A token signed by one process is accepted by the other (one key, in the shared folder).
    first, second = _token(api1, email), _token(api2, email)
    assert httpx.get(f"{api2}/api/v1/users/me", headers=first, timeout=10).status_code == 200

    upload = httpx.post(
        f"{api1}/api/v1/documents",
        headers=first,
        files={"file": ("faq.txt", FAQ.encode(), "text/plain")},
        timeout=30,
    )
    assert upload.status_code == 202, upload.text
    document_id = upload.json()["id"]
    deadline = time.monotonic() + 120
    status = ""
    while time.monotonic() < deadline and status != "completed":
        status = httpx.get(
            f"{api2}/api/v1/documents/{document_id}", headers=second, timeout=10
        ).json()["status"]
        assert status != "failed", _workers_output(cluster)
        time.sleep(0.3)
    assert status == "completed", _workers_output(cluster)
    # A worker read the file that the first API process wrote to the bucket.
    file = httpx.get(f"{api2}/api/v1/documents/{document_id}/file", headers=second, timeout=10)
    assert file.content == FAQ.encode() and _stored_copies(cluster.bucket) == 1

    scripted_llm.reset()
    scripted_llm.script("Book it two days ahead [1].", "Book it two days ahead [1].")
    for api, headers in ((api2, second), (api1, first)):
        answer = _ask(api, headers, "How early must the Harbour archive reading room be booked?")
        assert answer["sources"], answer
    assert MARKER in json.dumps(scripted_llm.requests)

    deleted = httpx.delete(f"{api2}/api/v1/documents/{document_id}", headers=second, timeout=30)
    assert deleted.status_code == 204
    assert (
        httpx.get(f"{api1}/api/v1/documents/{document_id}", headers=first, timeout=10).status_code
        == 404
    )
    scripted_llm.reset()
    after = _ask(api1, first, "How early must the Harbour archive reading room be booked?")
    assert after["sources"] is None
    assert MARKER not in json.dumps(scripted_llm.requests)
    assert _stored_copies(cluster.bucket) == 0  # the file left the bucket with the document


WORDS = [f"word{number}" for number in range(30)]


def _ask_and_leave(api: str, headers: dict[str, str], deltas: int) -> tuple[str, str, str]:
    """Ask on `api`, read `deltas` pieces, go away: (answer id, text read, last event id)."""
    shown, answer_id, last_id, event = "", "", "", ""
    body = {"content": "Tell me a long story", "rag_enabled": False}
    with httpx.stream(
        "POST", f"{api}/api/v1/messages/stream", headers=headers, json=body, timeout=30
    ) as response:
        for line in response.iter_lines():
            if line.startswith("id: "):
                last_id = line.removeprefix("id: ")
            elif line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                if event == "meta":
                    answer_id = data["assistant_message_id"]
                elif event == "delta":
                    shown += data["text"]
                    deltas -= 1
                    if deltas == 0:
                        break
    return answer_id, shown, last_id


def _follow(api: str, headers: dict[str, str], answer_id: str, last_id: str) -> list[str]:
    """The events of following the answer on `api` from `last_id`: "delta:<text>" or a name."""
    events, event = [], ""
    with httpx.stream(
        "GET",
        f"{api}/api/v1/messages/{answer_id}/stream",
        headers={**headers, "Last-Event-ID": last_id},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                events.append(f"delta:{data['text']}" if event == "delta" else event)
    return events


def test_an_answer_written_by_one_api_process_is_followed_and_stopped_on_the_other(
    cluster: Cluster, scripted_llm: ScriptedLLM
) -> None:
    processes = cluster.processes
    api1, api2 = str(processes["api1"].url), str(processes["api2"].url)
    email = f"reader-{uuid.uuid4().hex[:8]}@example.com"
    httpx.post(
        f"{api1}/api/v1/auth/register", json={"email": email, "password": PASSWORD}, timeout=30
    )
    headers = _token(api1, email)
    slow = Reply(content=" ".join(WORDS), piece_delay_seconds=0.1)
    scripted_llm.reset()
    scripted_llm.script(slow, slow)

    # Written on api1, read there up to a point, then followed on api2 from that point.
    answer_id, shown, last_id = _ask_and_leave(api1, headers, deltas=3)
    events = _follow(api2, headers, answer_id, last_id)
    assert events[0] == "meta" and events[-1] == "done"
    rest = "".join(event.removeprefix("delta:") for event in events if event.startswith("delta:"))
    assert shown + rest == " ".join(WORDS)

    # Written on api1, stopped from api2: kept as far as it got.
    answer_id, _, _ = _ask_and_leave(api1, headers, deltas=2)
    stopped = httpx.post(f"{api2}/api/v1/messages/{answer_id}/stop", headers=headers, timeout=30)
    assert stopped.status_code == 204, processes["api2"].output()
    chats = httpx.get(f"{api2}/api/v1/chats", headers=headers, timeout=10).json()["items"]
    listed = httpx.get(
        f"{api2}/api/v1/chats/{chats[0]['id']}/messages", headers=headers, timeout=10
    ).json()["items"]
    answer = listed[-1]
    assert answer["id"] == answer_id and answer["status"] == "complete"
    assert answer["meta"]["stopped"] is True
    assert 2 <= len(answer["content"].split()) < len(WORDS)


LONG = "\n\n".join(
    f"Paragraph {number} describes tide tables and harbour rules in detail. " * 8
    for number in range(300)
)
LAST = "The harbour master of the Quill lighthouse is called Ada Penhallow."


def _worker_holding(cluster: Cluster, claimed_by: str | None) -> Process:
    """The worker process whose id (`host:pid:nonce`) holds a job."""
    assert claimed_by is not None
    pid = int(claimed_by.split(":")[1])
    return next(
        process
        for name, process in cluster.processes.items()
        if name.startswith("worker") and process.popen.pid == pid
    )


def _register_and_upload(api1: str, api2: str) -> tuple[dict[str, str], dict[str, str], str]:
    """A new user's tokens on both processes, and the id of their long document."""
    email = f"crash-{uuid.uuid4().hex[:8]}@example.com"
    httpx.post(
        f"{api1}/api/v1/auth/register", json={"email": email, "password": PASSWORD}, timeout=30
    )
    first, second = _token(api1, email), _token(api2, email)
    upload = httpx.post(
        f"{api1}/api/v1/documents",
        headers=first,
        files={"file": ("tides.txt", f"{LONG}\n\n{LAST}".encode(), "text/plain")},
        timeout=30,
    )
    assert upload.status_code == 202, upload.text
    return first, second, upload.json()["id"]


def _messages(api: str, headers: dict[str, str], chat_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{api}/api/v1/chats/{chat_id}/messages", headers=headers, timeout=10)
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _kill_api_mid_answer(cluster: Cluster, scripted_llm: ScriptedLLM, first: dict[str, str],
                         second: dict[str, str]) -> None:  # fmt: skip
    """An answer being written on api1 when api1 is killed: its question and the text saved so
    far stay; the other process does not write it again; the chat goes on there."""
    api1, api2 = str(cluster.processes["api1"].url), str(cluster.processes["api2"].url)
    slow = Reply(content=" ".join(WORDS), piece_delay_seconds=0.15)
    scripted_llm.reset()
    scripted_llm.script(slow)
    answer_id, shown, _ = _ask_and_leave(api1, first, deltas=4)
    time.sleep(0.6)  # a save of the text so far (ANSWER_PROGRESS_SECONDS is 0.2)
    cluster.processes["api1"].popen.kill()
    cluster.processes["api1"].popen.wait(timeout=10)
    chats = httpx.get(f"{api2}/api/v1/chats", headers=second, timeout=10).json()["items"]
    chat_id = next(
        chat["id"]
        for chat in chats
        if any(message["id"] == answer_id for message in _messages(api2, second, chat["id"]))
    )
    listed = _messages(api2, second, chat_id)
    assert [message["role"] for message in listed] == ["user", "assistant"]
    kept = listed[-1]["content"]
    assert kept.startswith(shown.strip()) and " ".join(WORDS).startswith(kept)
    assert len(scripted_llm.requests) == 1  # written once, by the process that died

    scripted_llm.script("Ada Penhallow [1].")
    after = httpx.post(
        f"{api2}/api/v1/messages",
        headers=second,
        json={"content": "Who is the harbour master?", "chat_id": chat_id},
        timeout=60,
    )
    assert after.status_code == 200, after.text
    roles = [message["role"] for message in _messages(api2, second, chat_id)]
    assert roles == ["user", "assistant"] * 2


async def test_a_worker_killed_mid_document_and_an_api_process_killed_mid_answer_lose_nothing(
    cluster: Cluster, scripted_llm: ScriptedLLM, engine: AsyncEngine
) -> None:
    """Run last in this module: it kills a worker and the first API process."""
    api1, api2 = str(cluster.processes["api1"].url), str(cluster.processes["api2"].url)
    first, second, uploaded = await asyncio.to_thread(_register_and_upload, api1, api2)
    document_id = uuid.UUID(uploaded)
    started = await wait_for_document(engine, document_id, lambda d: d.chunks_done > 0, 180)
    _, job = await document_and_job(engine, document_id)
    killed = _worker_holding(cluster, job.claimed_by)
    killed.popen.kill()  # SIGKILL: no goodbye, the lease simply stops being renewed
    killed.popen.wait(timeout=10)
    assert started.chunk_count and started.chunks_done < started.chunk_count

    finished = await wait_for_document(
        engine,
        document_id,
        lambda d: d.status in (DocumentStatus.completed, DocumentStatus.failed),
        240,
    )
    _, job = await document_and_job(engine, document_id)
    assert finished.status == DocumentStatus.completed, (finished.error, _workers_output(cluster))
    assert job.attempts == 2 and finished.chunks_done == finished.chunk_count
    async with engine.connect() as connection:
        rows = await connection.scalar(
            text("SELECT count(*) FROM document_chunks WHERE document_id = :id"),
            {"id": document_id},
        )
    assert rows == finished.chunk_count  # every passage once: none lost, none twice

    scripted_llm.reset()
    scripted_llm.script("Ada Penhallow [1].")
    question = "Who is the harbour master of the Quill lighthouse?"
    found = await asyncio.to_thread(_ask, api2, second, question)
    assert found["sources"] and "Penhallow" in json.dumps(scripted_llm.requests)

    await asyncio.to_thread(_kill_api_mid_answer, cluster, scripted_llm, first, second)
