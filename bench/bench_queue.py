"""The processing queue behind a big backlog: what a claim costs, and bulk ingestion against
the embedding model alone.

    .venv/bin/python -m bench.bench_queue [--claims 3000 30000] [--backlogs 5000 30000]
        [--window 60] [--lanes 1] [--group 8]

Each part starts on a fresh database, migrated and never analysed by hand (as after a bulk
upload, before autovacuum has run).

1. The claim (`--claims`): N jobs of one owner queued, and one each of 20 other owners; one
   claim (`jobs_repository.claim_next`) timed 50 times, each rolled back, so the queue stays as it is.
2. Bulk ingestion (`--backlogs`): one owner adds N one-paragraph text files through the
   documents service (as uploads do: stored, a document and a job each); then one worker, as
   `docchat serve` runs it, ingests for `--window` seconds. The documents completed per second
   are compared with the embedding model alone on the same texts, one document per call and
   `--group` documents per call (as a worker embeds a group of small files). During the second half of the window another user adds a one-page file
   every window / 10 seconds, each timed from its upload to `completed`.
Targets (issue 38): bulk ingestion at least 80% of the model alone; the other user's upload
completed within 15 s.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import docchat.models  # noqa: F401  (every table, so foreign keys resolve)
from bench.bench_fairness import completed_count, page_of_text, running_worker
from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    median,
    percentile,
    table,
)
from docchat.db import create_engine, create_sessionmaker, utcnow
from docchat.documents import jobs_repository
from docchat.documents.models import Document, DocumentStatus, IngestionJob
from docchat.documents.service import add_file
from docchat.documents.storage import FileSource
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.components import Components
from docchat.users.models import User

CLAIMS_TIMED = 50
OTHER_OWNERS = 20
POLL_SECONDS = 0.25


async def new_user(session: AsyncSession) -> User:
    user = User(email=f"bench-{uuid.uuid4().hex[:10]}@example.com", password_hash="x")
    session.add(user)
    await session.flush()
    return user


async def queue_for(session: AsyncSession, owner: User, count: int) -> None:
    """`count` queued documents and their jobs (rows only: nothing is processed here)."""
    for start in range(0, count, 5000):
        ids = [uuid.uuid4() for _ in range(min(5000, count - start))]
        documents = [
            {
                "id": document_id,
                "owner_id": owner.id,
                "filename": "queued.txt",
                "content_type": "text/plain",
                "size_bytes": 1,
                "sha256": "0" * 64,
                "storage_key": "bench",
                "status": DocumentStatus.queued,
            }
            for document_id in ids
        ]
        await session.execute(insert(Document), documents)
        queued = [{"document_id": i, "owner_id": owner.id} for i in ids]
        await session.execute(insert(IngestionJob), queued)


async def claim_timings(backlog: int) -> list[float]:
    url = await fresh_database()
    engine = create_engine(url)
    try:
        sessions = create_sessionmaker(engine)
        async with sessions() as session:
            await queue_for(session, await new_user(session), backlog)
            for _ in range(OTHER_OWNERS):
                await queue_for(session, await new_user(session), 1)
            await session.commit()
        timings = []
        for _ in range(CLAIMS_TIMED):
            async with sessions() as session:
                started = time.perf_counter()
                claimed = await jobs_repository.claim_next(
                    session, worker_id="bench", now=utcnow(), stale_after=timedelta(hours=1)
                )
                timings.append((time.perf_counter() - started) * 1000)
                assert claimed is not None
                await session.rollback()
        return timings
    finally:
        await engine.dispose()
        await drop_database(url)


async def add_text(components: Components, owner: User, name: str, content: bytes) -> uuid.UUID:
    settings = components.settings
    async with components.sessionmaker() as session:
        user = await session.get(User, owner.id)
        assert user is not None
        added = await add_file(
            session,
            components.storage,
            user,
            FileSource(io.BytesIO(content)),
            name,
            max_bytes=settings.max_upload_bytes,
            quota=settings.quota,
        )
        await session.commit()
        return added.document.id


async def time_to_completed(
    sessions: async_sessionmaker[AsyncSession], components: Components, owner: User, limit: float
) -> float:
    started = time.perf_counter()
    content = page_of_text(random.Random()) + uuid.uuid4().hex.encode()
    document_id = await add_text(components, owner, "small.txt", content)
    while time.perf_counter() - started < limit:
        async with sessions() as session:
            status = await session.scalar(select(Document.status).where(Document.id == document_id))
        if status == DocumentStatus.completed:
            return time.perf_counter() - started
        await asyncio.sleep(POLL_SECONDS)
    return float("inf")


def model_alone(embedder: LocalMiniLMEmbedder, texts: list[str], per_call: int = 1) -> float:
    """Documents a second the embedding model manages alone, `per_call` documents a call."""
    embedder.embed(texts[:5])
    started = time.perf_counter()
    for start in range(0, len(texts), per_call):
        embedder.embed(texts[start : start + per_call])
    return len(texts) / (time.perf_counter() - started)


async def bulk_ingestion(
    embedder: LocalMiniLMEmbedder, backlog: int, window: float, lanes: int, group: int
) -> dict[str, float]:
    rng = random.Random(7)
    url = await fresh_database()
    try:
        with tempfile.TemporaryDirectory() as data:
            settings = build_settings(url, Path(data))
            worker = settings.worker.model_copy(update={"lanes": lanes, "group_size": group})
            settings = settings.model_copy(update={"worker": worker})
            components, engine = build_components(settings, embedder)
            sessions = components.sessionmaker
            async with sessions() as session:
                bulk, single = await new_user(session), await new_user(session)
                await session.commit()
            texts = [page_of_text(rng) for _ in range(backlog)]
            started = time.perf_counter()
            for number, content in enumerate(texts):
                await add_text(components, bulk, f"file-{number}.txt", content)
            adding = time.perf_counter() - started
            sample = [t.decode() for t in texts[:304]]
            alone = model_alone(embedder, sample)
            alone_grouped = model_alone(embedder, sample, per_call=group)
            async with running_worker(IngestionWorker(components)):
                await asyncio.sleep(window / 2)
                waits = []
                tries_started = time.perf_counter()
                for _ in range(5):
                    tried = time.perf_counter()
                    waits.append(await time_to_completed(sessions, components, single, window))
                    await asyncio.sleep(max(0.0, window / 10 - (time.perf_counter() - tried)))
                elapsed = window / 2 + time.perf_counter() - tries_started
                done = await completed_count(sessions, bulk.id)
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)
    rate = done / elapsed
    return {
        "adding": adding,
        "rate": rate,
        "alone": alone,
        "alone_grouped": alone_grouped,
        "p50": percentile(waits, 50),
        "max": max(waits),
    }


async def main(
    claims: list[int], backlogs: list[int], window: float, lanes: int, group: int
) -> None:
    rows = []
    for backlog in claims:
        timings = await claim_timings(backlog)
        rows.append(
            [f"{backlog:,} queued", f"{median(timings):.2f}", f"{percentile(timings, 95):.2f}"]
        )
    print(
        f"Queue claim, fresh database, one owner's backlog and {OTHER_OWNERS} others; {machine()}"
    )
    print(table(["backlog", "claim p50 ms", "claim p95 ms"], rows))
    embedder = LocalMiniLMEmbedder()
    rows = []
    for backlog in backlogs:
        measured = await bulk_ingestion(embedder, backlog, window, lanes, group)
        rate, alone, grouped = measured["rate"], measured["alone"], measured["alone_grouped"]
        rows.append(
            [
                f"{backlog:,} one-paragraph files",
                f"{measured['adding']:.0f}",
                f"{rate:.1f}",
                f"{alone:.1f} / {grouped:.1f}",
                f"{rate / alone:.0%} / {rate / grouped:.0%}",
                f"{measured['p50']:.2f} / {measured['max']:.2f}",
            ]
        )
    print(
        f"Bulk ingestion, one worker of {lanes} lane(s), groups of {group}, {window:.0f} s window;"
        f" {machine()}"
    )
    print(
        table(
            [
                "backlog",
                "added in s",
                "ingested docs/s",
                f"model alone docs/s, 1 / {group} a call",
                "share",
                "other user's upload p50 / max s",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, nargs="*", default=[3000, 30000])
    parser.add_argument("--backlogs", type=int, nargs="*", default=[5000, 30000])
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--lanes", type=int, default=1, help="WORKER_LANES of the worker")
    parser.add_argument(
        "--group", type=int, default=8, help="WORKER_GROUP_SIZE of the worker (1: no groups)"
    )
    arguments = parser.parse_args()
    asyncio.run(
        main(
            arguments.claims, arguments.backlogs, arguments.window, arguments.lanes, arguments.group
        )
    )
