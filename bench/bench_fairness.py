"""Fair ingestion: another user's small upload while one user's backlog is queued.

    .venv/bin/python -m bench.bench_fairness [--backlog 2000] [--window 60] [--tries 10]

One process with one worker, as `docchat serve` runs it (API over ASGI, the worker, the
sandboxed reader, MiniLM, Chroma, PostgreSQL). User A uploads a backlog of short text files
(one paragraph each, a page). Then, for `--window` seconds, the worker runs on A's backlog
alone, and A's throughput is counted. For the next window, user B uploads a one-page file every
window / tries seconds; each is timed from the upload to `completed`, and A's throughput is
counted again. Targets: B's p95 at most 15 s, A's throughput with B at least 90% of alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from tests.support.users import auth_headers

from bench.bench_ingestion import prose
from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    percentile,
    table,
)
from docchat.documents.models import Document, DocumentStatus
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.app import attach_components, create_app

# How often B looks at its upload (the web app polls every 1.5 s; finer here, for the timing).
POLL_SECONDS = 0.25


def page_of_text(rng: random.Random) -> bytes:
    """About a page of prose (one chunk)."""
    return prose(rng, 900).encode()


async def completed_count(
    sessionmaker: async_sessionmaker[AsyncSession], owner_id: uuid.UUID
) -> int:
    async with sessionmaker() as session:
        statement = select(func.count()).where(
            Document.owner_id == owner_id, Document.status == DocumentStatus.completed
        )
        return int((await session.execute(statement)).scalar_one())


@contextlib.asynccontextmanager
async def running_worker(worker: IngestionWorker) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run_forever(stop))
    try:
        yield
    finally:
        stop.set()
        await task


async def owner_of(client: httpx.AsyncClient, headers: dict[str, str]) -> uuid.UUID:
    response = await client.post(
        "/api/v1/documents", headers=headers, files={"file": ("probe.txt", b"probe", "text/plain")}
    )
    response.raise_for_status()
    return uuid.UUID(response.json()["owner_id"])


async def time_to_completed(
    client: httpx.AsyncClient, headers: dict[str, str], content: bytes, limit: float
) -> float:
    started = time.perf_counter()
    response = await client.post(
        "/api/v1/documents", headers=headers, files={"file": ("small.txt", content, "text/plain")}
    )
    response.raise_for_status()
    url = f"/api/v1/documents/{response.json()['id']}"
    while time.perf_counter() - started < limit:
        if (await client.get(url, headers=headers)).json()["status"] == "completed":
            return time.perf_counter() - started
        await asyncio.sleep(POLL_SECONDS)
    return float("inf")


async def main(backlog: int, window: float, tries: int) -> None:
    rng = random.Random(7)
    url = await fresh_database()
    try:
        with tempfile.TemporaryDirectory() as data:
            settings = build_settings(url, Path(data))
            components, engine = build_components(settings, LocalMiniLMEmbedder())
            app = create_app(settings, run_worker=False)
            attach_components(app, components)
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=120
            ) as client:
                bulk, single = await auth_headers(client), await auth_headers(client)
                bulk_owner = await owner_of(client, bulk)
                started = time.perf_counter()
                for number in range(backlog):
                    response = await client.post(
                        "/api/v1/documents",
                        headers=bulk,
                        files={"file": (f"file-{number}.txt", page_of_text(rng), "text/plain")},
                    )
                    response.raise_for_status()
                uploading = time.perf_counter() - started
                worker = IngestionWorker(components)
                sessions = components.sessionmaker
                async with running_worker(worker):
                    before = await completed_count(sessions, bulk_owner)
                    await asyncio.sleep(window)
                    alone = (await completed_count(sessions, bulk_owner) - before) / window
                    before = await completed_count(sessions, bulk_owner)
                    started = time.perf_counter()
                    waits = []
                    for _ in range(tries):
                        tried = time.perf_counter()
                        waits.append(
                            await time_to_completed(client, single, page_of_text(rng), window)
                        )
                        await asyncio.sleep(
                            max(0.0, window / tries - (time.perf_counter() - tried))
                        )
                    elapsed = time.perf_counter() - started
                    shared = (await completed_count(sessions, bulk_owner) - before) / elapsed
                    left = backlog + 1 - await completed_count(sessions, bulk_owner)
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)
    print(
        f"Fair ingestion: user A's backlog of {backlog} one-page text files (uploaded in "
        f"{uploading:.0f} s), one worker; {machine()}"
    )
    finished = [wait for wait in waits if wait != float("inf")]
    print(
        table(
            ["measure", "value"],
            [
                ["A alone, documents/s", f"{alone:.2f}"],
                ["A while B uploads, documents/s", f"{shared:.2f}"],
                ["A with B, share of alone", f"{shared / alone:.0%}" if alone else "-"],
                [
                    f"B upload to completed, p50 s ({tries} tries)",
                    f"{percentile(finished, 50):.2f}",
                ],
                ["B upload to completed, p95 s", f"{percentile(finished, 95):.2f}"],
                ["B upload to completed, max s", f"{max(finished, default=float('nan')):.2f}"],
                ["B uploads not completed within the window", f"{len(waits) - len(finished)}"],
                ["A documents still queued at the end", f"{left}"],
            ],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backlog", type=int, default=2000)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--tries", type=int, default=10)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.backlog, arguments.window, arguments.tries))
