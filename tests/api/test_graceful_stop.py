"""SIGTERM stops docchat promptly and loses nothing (security issue, item C), against real
processes: `docchat serve` in the middle of a slowly streamed answer and of a document, and
`docchat worker` in the middle of a long document. Each exits within 10 s; the document it
held is queued again (not failed, its attempt not counted) and completes under a new worker."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.db import create_sessionmaker
from docchat.documents import jobs_repository
from docchat.documents.models import Document, DocumentStatus, JobStatus
from docchat.users.models import User
from tests.support import glossary
from tests.support.documents import document_and_job, wait_for_document
from tests.support.llm_server import Reply, ScriptedLLM, free_port
from tests.support.processes import ROOT, Process, docchat_env, start_worker, wait_for
from tests.support.users import auth_headers

STOP_WITHIN_SECONDS = 10
# A model writing one word every half second: its answer would take a minute to finish.
SLOW_ANSWER = Reply(content=" ".join(f"word{n}" for n in range(120)), piece_delay_seconds=0.5)

pytestmark = pytest.mark.usefixtures("fresh_llm")


# Long enough that the stop lands mid-document (its embedding takes several seconds on two
# cores, in batches of 16), short enough that reading it again whole stays quick: at 800
# paragraphs the two tests took 93 s and 73 s, most of it embedding the document twice.
def _manual(paragraphs: int = 300) -> str:
    return "\n\n".join(
        f"Paragraph {n} sets out the harbour's rules on tides, berths and pilots. " * 7
        for n in range(paragraphs)
    )


@pytest.fixture
def env(
    database_url: str, scripted_llm: ScriptedLLM, tmp_path: Path, compiled_glossary: Path
) -> dict[str, str]:
    return docchat_env(
        DATABASE_URL=database_url,
        DATA_DIR=str(glossary.seed(compiled_glossary, tmp_path / "data")),
        LLM_BASE_URL=scripted_llm.base_url,
        LLM_MODEL="scripted-model",
        LOG_LEVEL="INFO",
        WORKER_HEARTBEAT_SECONDS="1",
        WORKER_STALE_AFTER_SECONDS="30",
        EMBEDDING_BATCH_SIZE="16",
    )


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    """Every process a test starts, stopped (killed if need be) at its end."""
    started: list[Process] = []
    yield started
    for process in started:
        if process.popen.poll() is None:
            process.popen.kill()
            process.popen.wait()


def _serve(env: dict[str, str], logs: Path) -> Process:
    """`docchat serve` with its in-process worker, as one machine runs it."""
    port = free_port()
    log = logs / "api.log"
    command = [sys.executable, "-m", "docchat.main.cli", "serve", "--port", str(port)]
    with log.open("wb") as out:
        popen = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=out)  # noqa: S603
    return Process("api", popen, log, f"http://127.0.0.1:{port}")


def _stop_and_time(process: Process) -> float:
    """SIGTERM, then the seconds until the process has exited (failing past the limit)."""
    started = time.monotonic()
    process.popen.send_signal(signal.SIGTERM)
    try:
        process.popen.wait(timeout=STOP_WITHIN_SECONDS + 20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{process.name} ignored SIGTERM for 30 s:\n{process.output()}")
    return time.monotonic() - started


FINISHED = (DocumentStatus.completed, DocumentStatus.failed)


def _embedding(document: Document) -> bool:
    return document.chunks_done > 0


def _finished(document: Document) -> bool:
    return document.status in FINISHED


async def _assert_handed_back(engine: AsyncEngine, document_id: uuid.UUID) -> None:
    document, job = await document_and_job(engine, document_id)
    assert document.status == DocumentStatus.queued, (document.status, document.error)
    assert job.status == JobStatus.queued and job.claim_token is None
    assert job.attempts == 0  # the interrupted attempt does not count
    assert job.last_error is None


async def _completes_under_a_new_worker(
    engine: AsyncEngine,
    document_id: uuid.UUID,
    env: dict[str, str],
    logs: Path,
    processes: list[Process],
) -> None:
    worker = start_worker("worker-after", env, logs)
    processes.append(worker)
    finished = await wait_for_document(engine, document_id, _finished, seconds=240)
    assert finished.status == DocumentStatus.completed, (finished.error, worker.output())
    assert finished.chunks_done == finished.chunk_count
    _, job = await document_and_job(engine, document_id)
    assert job.status == JobStatus.done and job.attempts == 1
    assert _stop_and_time(worker) < STOP_WITHIN_SECONDS  # an idle worker stops too


async def _read_until_first_word(lines: AsyncIterator[str]) -> None:
    event = ""
    async for line in lines:
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event == "delta":
            assert json.loads(line.removeprefix("data: "))["text"]
            return


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read what is left of the stream: it ends, cut, when the server goes."""
    try:
        async for _ in lines:
            pass
    except httpx.HTTPError:
        pass


async def test_the_server_stops_within_10_s_mid_answer_and_mid_document(
    env: dict[str, str],
    logs: Path,
    processes: list[Process],
    engine: AsyncEngine,
    scripted_llm: ScriptedLLM,
) -> None:
    api = _serve(env, logs)
    processes.append(api)
    wait_for(api, f"{api.url}/readyz")
    async with httpx.AsyncClient(base_url=str(api.url), timeout=60) as client:
        headers = await auth_headers(client)
        files = {"file": ("harbour.txt", _manual().encode(), "text/plain")}
        uploaded = await client.post("/api/v1/documents", headers=headers, files=files)
        assert uploaded.status_code == 202, uploaded.text
        document_id = uuid.UUID(uploaded.json()["id"])
        await wait_for_document(engine, document_id, _embedding, seconds=120)

        scripted_llm.script(SLOW_ANSWER)
        body = {"content": "Tell me about the harbour", "rag_enabled": False}
        async with client.stream(
            "POST", "/api/v1/messages/stream", headers=headers, json=body
        ) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            await _read_until_first_word(lines)
            stopped_in = _stop_and_time(api)
            await _drain(lines)

    assert stopped_in < STOP_WITHIN_SECONDS, api.output()
    # (uvicorn, its shutdown done, raises the signal again: the exit says what ended it.)
    assert api.popen.returncode in (0, -signal.SIGTERM), api.output()
    assert "Application shutdown complete" in api.output()
    await _assert_handed_back(engine, document_id)
    await _completes_under_a_new_worker(engine, document_id, env, logs, processes)


async def test_a_worker_stops_within_10_s_mid_document_and_hands_it_back(
    env: dict[str, str],
    logs: Path,
    processes: list[Process],
    engine: AsyncEngine,
    tmp_path: Path,
) -> None:
    files = tmp_path / "data" / "files" / "cd"
    files.mkdir(parents=True)
    (files / "harbour").write_text(_manual())
    async with create_sessionmaker(engine)() as session:
        user = User(email=f"stop-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
        session.add(user)
        await session.flush()
        document = Document(
            owner_id=user.id,
            filename="harbour.txt",
            content_type="text/plain",
            size_bytes=len(_manual()),
            sha256=uuid.uuid4().hex * 2,
            storage_key="cd/harbour",
        )
        session.add(document)
        await session.flush()
        await jobs_repository.enqueue(session, document)
        await session.commit()
        document_id = document.id

    worker = start_worker("worker", env, logs)
    processes.append(worker)
    await wait_for_document(engine, document_id, _embedding, seconds=120)
    stopped_in = _stop_and_time(worker)

    assert stopped_in < STOP_WITHIN_SECONDS, worker.output()
    assert worker.popen.returncode == 0, worker.output()
    await _assert_handed_back(engine, document_id)
    await _completes_under_a_new_worker(engine, document_id, env, logs, processes)
