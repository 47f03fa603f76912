"""Fair ingestion: workers take turns between owners, and a waiting document shows its place."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from docchat.db import utcnow
from docchat.documents import jobs_repository
from docchat.documents.models import IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from tests.support.documents import upload
from tests.support.files import filler
from tests.support.users import auth_headers


def _one_at_a_time(components: Components, **worker: Any) -> Components:
    settings = components.settings.worker.model_copy(update={"group_size": 1, **worker})
    return dataclasses.replace(
        components, settings=components.settings.model_copy(update={"worker": settings})
    )


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

    # One document at a time, so each turn of the rotation shows (small files are otherwise
    # read in groups that follow the same rotation: test_worker_groups.py).
    worker = IngestionWorker(_one_at_a_time(components))
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
    claimed = await worker.claims.claim()
    assert claimed is not None and claimed.document_id.hex == document["id"].replace("-", "")
    seen = (await client.get(f"/api/v1/documents/{document['id']}", headers=headers)).json()
    assert seen["status"] == "processing" and seen["queue_position"] is None


async def _queue(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, name: str
) -> list[str]:
    return [
        (await upload(client, headers, f"{name}-{n}.md", f"{name} {n}".encode())).json()["id"]
        for n in range(count)
    ]


async def _remove(client: httpx.AsyncClient, headers: dict[str, str], ids: list[str]) -> None:
    """Out of the queue (the run's database is shared with later tests)."""
    for document_id in ids:
        assert (await client.delete(f"/api/v1/documents/{document_id}", headers=headers)).is_success


async def _set_job_status(components: Components, document_id: uuid.UUID, status: str) -> None:
    async with components.sessionmaker() as session:
        await session.execute(
            update(IngestionJob)
            .where(IngestionJob.document_id == document_id)
            .values(status=status, claimed_at=utcnow(), heartbeat_at=utcnow())
        )
        await session.commit()


async def test_a_claim_beside_another_workers_goes_to_the_next_owner_not_the_same_one(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    bulk, single = await auth_headers(live_client), await auth_headers(live_client)
    backlog = await _queue(live_client, bulk, 3, "bulk")
    mine = await _queue(live_client, single, 1, "mine")
    now, stale_after = utcnow(), timedelta(hours=1)
    sessions = live_components.sessionmaker
    try:
        async with sessions() as first, sessions() as second:
            # The first worker holds the head of an owner's queue, not yet committed: the
            # second takes another owner's head, not that owner's next job.
            taken = await jobs_repository.claim_next(
                first, worker_id="one", now=now, stale_after=stale_after
            )
            beside = await jobs_repository.claim_next(
                second, worker_id="two", now=now, stale_after=stale_after
            )
            assert taken is not None and beside is not None
            assert taken.owner_id != beside.owner_id
            await first.rollback()
            await second.rollback()
    finally:
        await _remove(live_client, bulk, backlog)
        await _remove(live_client, single, mine)


async def test_idle_owners_only_skips_an_owner_with_a_job_running(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    bulk, single = await auth_headers(live_client), await auth_headers(live_client)
    backlog = await _queue(live_client, bulk, 2, "bulk")
    mine = await _queue(live_client, single, 1, "mine")
    stale_after = timedelta(hours=1)
    first_of_backlog = uuid.UUID(backlog[0])
    try:
        await _set_job_status(live_components, first_of_backlog, "running")
        async with live_components.sessionmaker() as session:
            # Every idle owner's head, one each, until none is left (other tests' leftovers
            # included): never the owner with a job running.
            claimed = []
            while job := await jobs_repository.claim_next(
                session,
                worker_id="two",
                now=utcnow(),
                stale_after=stale_after,
                idle_owners_only=True,
            ):
                claimed.append(job)
            owners = [job.owner_id for job in claimed]
            assert len(owners) == len(set(owners))
            assert [str(job.document_id) for job in claimed if str(job.document_id) in mine] == mine
            assert not any(str(job.document_id) in backlog for job in claimed)
            await session.rollback()
    finally:
        await _set_job_status(live_components, first_of_backlog, "done")
        await _remove(live_client, bulk, backlog)
        await _remove(live_client, single, mine)


async def test_a_worker_with_two_lanes_processes_two_documents_at_once(
    live_client: httpx.AsyncClient, live_components: Components, monkeypatch: pytest.MonkeyPatch
) -> None:
    components = _one_at_a_time(live_components, lanes=2)
    first, second = await auth_headers(live_client), await auth_headers(live_client)
    ids = await _queue(live_client, first, 2, "first") + await _queue(live_client, second, 2, "b")
    in_flight, most = 0, 0
    process = IngestionWorker.process

    async def counted(self: IngestionWorker, job: Any) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await process(self, job)
        finally:
            in_flight -= 1

    monkeypatch.setattr(IngestionWorker, "process", counted)
    stop = asyncio.Event()
    running = asyncio.create_task(IngestionWorker(components).run_forever(stop))
    try:
        for _ in range(200):
            statuses = {
                **await _statuses(live_client, first),
                **await _statuses(live_client, second),
            }
            if sorted(statuses.values()) == ["completed"] * 4:
                break
            await asyncio.sleep(0.1)
        assert sorted(statuses.values()) == ["completed"] * 4
        assert most == 2
    finally:
        stop.set()
        await asyncio.wait_for(running, timeout=30)
        await _remove(live_client, first, ids[:2])
        await _remove(live_client, second, ids[2:])
