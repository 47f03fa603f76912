"""Fair ingestion: workers take turns between owners, and a waiting document shows its place."""

from __future__ import annotations

import httpx

from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.documents import upload
from tests.support.files import filler
from tests.support.users import auth_headers


async def _statuses(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
    return {item["filename"]: item["status"] for item in listed}


async def test_one_users_backlog_does_not_hold_back_another_users_upload(
    client: httpx.AsyncClient, components: Components
) -> None:
    bulk, single = await auth_headers(client), await auth_headers(client)
    for number in range(5):
        await upload(client, bulk, f"bulk-{number}.md", filler(f"topic {number}", 5).encode())
    mine = (await upload(client, single, "mine.md", b"one short note")).json()
    # Behind one document of the other owner's queue, not behind all five.
    assert mine["status"] == "queued" and mine["queue_position"] == 2
    backlog = (await client.get("/api/v1/documents", headers=bulk)).json()["items"]
    assert {item["filename"]: item["queue_position"] for item in backlog} == {
        "bulk-0.md": 1,
        "bulk-1.md": 3,  # after bulk-0 and mine
        "bulk-2.md": 4,
        "bulk-3.md": 5,
        "bulk-4.md": 6,
    }

    worker = IngestionWorker(components)
    assert await worker.run_once()  # the oldest job: bulk-0
    assert await worker.run_once()  # then the other owner's turn
    assert await _statuses(client, single) == {"mine.md": "completed"}
    waiting = await _statuses(client, bulk)
    assert waiting["bulk-0.md"] == "completed"
    assert [waiting[f"bulk-{n}.md"] for n in range(1, 5)] == ["queued"] * 4
    # Alone in the queue again, the backlog runs in its own order.
    assert await worker.run_once()
    assert (await _statuses(client, bulk))["bulk-1.md"] == "completed"
    await worker.run_until_idle()
    assert set((await _statuses(client, bulk)).values()) == {"completed"}


async def test_a_document_is_processing_once_a_worker_has_it(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    document = (await upload(client, headers, "notes.md", b"some notes")).json()
    worker = IngestionWorker(components)
    claimed = await worker._claim()
    assert claimed is not None and claimed.document_id.hex == document["id"].replace("-", "")
    seen = (await client.get(f"/api/v1/documents/{document['id']}", headers=headers)).json()
    assert seen["status"] == "processing" and seen["queue_position"] is None
