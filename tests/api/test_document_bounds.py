"""No document holds the worker (security issue, item A): a small file that declares millions
of cells fails at once with a reason its owner can act on, and while a long legitimate
document is embedded, other owners' uploads are processed in between."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.documents import upload, upload_and_process
from tests.support.office_files import odt_with_repeated_cells
from tests.support.users import auth_headers


async def test_an_odt_of_repeated_cells_fails_quickly_with_what_to_do(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    started = time.monotonic()
    document = await upload_and_process(
        client, components, headers, "totals.odt", odt_with_repeated_cells()
    )
    # Was: `completed` with 14,998 chunks, after minutes of the only worker's time.
    assert time.monotonic() - started < 20
    assert document["status"] == "failed"
    assert document["error"].startswith("This file (4 KB) expands to 8.4 million characters")
    assert "split it into smaller files, or remove empty or repeated rows" in document["error"]


def _long_text(paragraphs: int) -> bytes:
    return "\n\n".join(
        f"Section {n} of the maintenance manual covers valves, seals and pressure checks. " * 6
        for n in range(paragraphs)
    ).encode()


async def _status(client: httpx.AsyncClient, headers: dict[str, str], document_id: str) -> str:
    document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
    status: str = document["status"]
    return status


async def _wait_for_progress(
    client: httpx.AsyncClient, headers: dict[str, str], document_id: str
) -> None:
    for _ in range(600):
        document = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
        if document["status"] == "processing" and document["chunks_done"] > 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the long document never started embedding")


async def test_another_owners_upload_runs_while_a_long_document_is_embedded(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    settings = live_components.settings
    patched = settings.model_copy(
        update={
            "worker": settings.worker.model_copy(update={"interleave_seconds": 0.3}),
            "embedding": settings.embedding.model_copy(update={"batch_size": 8}),
        }
    )
    worker = IngestionWorker(dataclasses.replace(live_components, settings=patched))
    owner, other = await auth_headers(live_client), await auth_headers(live_client)
    manual = await upload(live_client, owner, "manual.txt", _long_text(300))
    assert manual.status_code == 202
    manual_id = manual.json()["id"]

    # One job at a time, as a single worker runs: the long document.
    long_run = asyncio.create_task(worker.run_once())
    await _wait_for_progress(live_client, owner, manual_id)
    note = await upload(live_client, other, "note.txt", b"The lift is serviced on Fridays.")
    note_id = note.json()["id"]
    for _ in range(1200):
        if long_run.done() or await _status(live_client, other, note_id) == "completed":
            break
        await asyncio.sleep(0.05)
    # Was: the note waited in the queue until the whole manual was embedded.
    assert await _status(live_client, other, note_id) == "completed"
    assert await _status(live_client, owner, manual_id) == "processing"

    assert await long_run
    assert await _status(live_client, owner, manual_id) == "completed"
    async with live_components.sessionmaker() as session:
        assert await _attempts(session, manual_id) == 1  # letting others in is no new attempt


async def _attempts(session: AsyncSession, document_id: str) -> int:
    statement = select(IngestionJob.attempts).where(
        IngestionJob.document_id == uuid.UUID(document_id)
    )
    return int((await session.execute(statement)).scalar_one())
