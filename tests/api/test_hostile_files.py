"""Files built to exhaust a reader (issue 13, items 3 and 4): they cost their own time limit,
fail with a reason, and never hold the worker, a request thread or another user."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from docchat.config import AnswerSettings, Settings, WorkerSettings
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.extraction.sandbox import ExtractionSandbox, Limits
from docchat.main.components import Components
from tests.support.documents import upload, upload_and_process
from tests.support.files import exhausting_pdf, filler, make_pdf
from tests.support.live_server import LiveServer
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers


def _with_sandbox(components: Components, limits: Limits) -> Components:
    return dataclasses.replace(components, extractor=ExtractionSandbox(limits, name="test"))


async def test_a_pdf_of_pages_that_exhaust_the_reader_fails_after_three_pages(
    client: httpx.AsyncClient, components: Components
) -> None:
    hostile = _with_sandbox(components, Limits(wall_seconds=120, page_seconds=0.5))
    headers = await auth_headers(client)
    try:
        document = await upload_and_process(client, hostile, headers, "x.pdf", exhausting_pdf())
    finally:
        hostile.extractor.close()
    assert document["status"] == "failed"
    assert document["error"].startswith("3 pages could not be read (pages 1, 2, 3)")
    assert "took more than 0.5 s" in document["error"]


async def test_the_worker_is_free_for_the_next_document_afterwards(
    client: httpx.AsyncClient, components: Components
) -> None:
    # The limit is the fine file's too, with its new reader process's start: 2 s failed it on a
    # machine busy compiling beside the tests.
    hostile = _with_sandbox(components, Limits(wall_seconds=5, page_seconds=100))
    headers = await auth_headers(client)
    try:
        stuck = await upload_and_process(client, hostile, headers, "x.pdf", exhausting_pdf())
        fine = await upload_and_process(
            client, hostile, headers, "fine.pdf", make_pdf([filler("lighthouses", 10)])
        )
    finally:
        hostile.extractor.close()
    assert stuck["status"] == "failed"
    assert "longer than 5 s and was stopped" in stuck["error"]
    # A new reader process took over.
    assert fine["status"] == "completed", fine.get("error")


async def test_a_reader_that_spins_is_stopped_by_its_cpu_limit(tmp_path: Path) -> None:
    path = tmp_path / "x.pdf"
    path.write_bytes(exhausting_pdf())
    sandbox = ExtractionSandbox(Limits(wall_seconds=60, cpu_seconds=1, page_seconds=100))
    try:
        with pytest.raises(ExtractionError, match="more than 1 s of CPU"):
            await sandbox.prepare(path, FileKind.pdf, chunk_size=1000, chunk_overlap=200)
    finally:
        sandbox.close()


async def test_a_cancelled_caller_does_not_free_the_sandbox_early(tmp_path: Path) -> None:
    slow, quick = tmp_path / "slow.pdf", tmp_path / "quick.pdf"
    slow.write_bytes(exhausting_pdf(pages=2))
    quick.write_bytes(make_pdf([filler("harbours", 5)]))
    sandbox = ExtractionSandbox(Limits(wall_seconds=60, page_seconds=1))
    try:
        first = asyncio.create_task(
            sandbox.prepare(slow, FileKind.pdf, chunk_size=1000, chunk_overlap=200)
        )
        await asyncio.sleep(0.2)
        first.cancel()
        # The next caller waits for the child instead of talking to it mid-answer.
        prepared = await sandbox.prepare(quick, FileKind.pdf, chunk_size=1000, chunk_overlap=200)
        assert prepared.page_count == 1 and "harbours" in prepared.chunks[0].text
    finally:
        sandbox.close()


# -- item 3: inline answers never read a file in the request's threads ---------------------


@pytest.fixture(scope="module")
def inline_server(settings: Settings) -> Iterator[LiveServer]:
    """A server without a worker (uploads stay `processing`) and a 3 s inline time limit."""
    patched = settings.model_copy(
        update={
            "worker": WorkerSettings(_env_file=None, enabled=False),  # type: ignore[call-arg]
            "answers": AnswerSettings(_env_file=None, inline_timeout_seconds=3),  # type: ignore[call-arg]
        }
    )
    server = LiveServer(patched).start()
    yield server
    server.stop()


async def test_messages_attaching_a_hostile_pdf_do_not_stall_anyone_else(
    inline_server: LiveServer, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.reset()
    async with httpx.AsyncClient(base_url=inline_server.url, timeout=120) as client:
        attacker = await auth_headers(client)
        poisoned = await upload(client, attacker, "x.pdf", exhausting_pdf())
        assert poisoned.status_code == 202
        assert poisoned.json()["status"] in ("queued", "processing")
        body = {"content": "What does it say?", "document_ids": [poisoned.json()["id"]]}
        attacks = [
            asyncio.create_task(client.post("/api/v1/messages", headers=attacker, json=body))
            for _ in range(6)
        ]
        await asyncio.sleep(0.5)  # the six are in the server now
        ready = await client.get("/readyz")
        assert ready.status_code == 200
        # Everyone else was served while the hostile file was still being read.
        assert not all(task.done() for task in attacks)
        answers = await asyncio.gather(*attacks)
        for answer in answers:
            assert answer.status_code == 200, answer.text
            assert answer.json()["assistant_message"]["sources"] is None
        # The server has no worker: leave no queued job for other tests' workers to find.
        url = f"/api/v1/documents/{poisoned.json()['id']}"
        assert (await client.delete(url, headers=attacker)).status_code == 204
    scripted_llm.reset()
