"""Sources that keep a collection in step: what a large folder costs to sync, the first time
and then every hour.

    .venv/bin/python -m bench.bench_sources [--files 10000] [--window 60]

On a fresh database, an administrator's collection gets a folder source holding `--files`
one-paragraph text files (in 100 sub-folders), synced as the worker does (`SourceSyncer`):

1. First sync: listing the folder and bringing every file in (stored, a document, a job, a
   row each), timed; then one ingestion worker reads what it queued for `--window` seconds,
   its documents per second compared with the embedding model alone on the same texts. During
   the second half of the window another user uploads a one-page file every window / 10 s, each
   timed from upload to `completed`: a big first sync must not hold them back.
2. Unchanged re-sync: the same folder again (target: at most 30 s for 10,000 files, and no
   file read, no job queued, nothing embedded).
3. Re-sync after 10 files changed and 10 deleted: only those 20 are touched (10 new versions
   queued, 10 documents removed).

Parts 2 and 3 need the documents read; embedding 10,000 files takes longer than the window,
so those the window did not reach are marked completed in the database first (what the sync
does does not depend on their content).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select, update

import docchat.models  # noqa: F401  (every table, so foreign keys resolve)
from bench.bench_fairness import completed_count, page_of_text, running_worker
from bench.bench_queue import model_alone, new_user, time_to_completed
from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    percentile,
    table,
)
from docchat.config import SourceSettings
from docchat.documents.models import Document, DocumentStatus, IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.components import Components
from docchat.membership.models import Collection, CollectionMember, CollectionRole
from docchat.sources.models import Source, SourceState
from docchat.sources.sync import SourceSyncer
from docchat.users.models import Role, User

FOLDERS = 100


def write_folder(root: Path, files: int, rng: random.Random) -> list[Path]:
    paths = []
    for number in range(files):
        path = root / f"team-{number % FOLDERS:02d}" / f"note-{number:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(page_of_text(rng) + f" Note {number}.".encode())
        paths.append(path)
    return paths


async def add_source(components: Components, folder: Path) -> tuple[User, Source]:
    async with components.sessionmaker() as session:
        owner = await new_user(session)
        owner.role = Role.admin
        collection = Collection(name="Team notes")
        session.add(collection)
        await session.flush()
        session.add(
            CollectionMember(
                collection_id=collection.id,
                user_id=owner.id,
                role=CollectionRole.owner,
                accepted_at=func.now(),
            )
        )
        source = Source(
            collection_id=collection.id,
            owner_id=owner.id,
            kind="folder",
            name="Team notes",
            settings={"path": str(folder)},
            interval_minutes=None,
            state=SourceState.idle,
            next_sync_at=func.now(),
            progress={},
        )
        session.add(source)
        await session.commit()
        return owner, source


async def sync_now(components: Components, source: Source) -> tuple[float, dict[str, int]]:
    async with components.sessionmaker() as session:
        await session.execute(
            update(Source).where(Source.id == source.id).values(next_sync_at=func.now())
        )
        await session.commit()
    started = time.perf_counter()
    assert await SourceSyncer(components).run_once()
    elapsed = time.perf_counter() - started
    async with components.sessionmaker() as session:
        progress = await session.scalar(select(Source.progress).where(Source.id == source.id))
    return elapsed, dict(progress or {})


async def jobs_count(components: Components) -> int:
    async with components.sessionmaker() as session:
        return int((await session.execute(select(func.count(IngestionJob.id)))).scalar_one())


async def mark_completed(components: Components, owner: User) -> None:
    async with components.sessionmaker() as session:
        await session.execute(
            update(Document)
            .where(Document.owner_id == owner.id, Document.status != DocumentStatus.completed)
            .values(status=DocumentStatus.completed, chunk_count=1, token_count=150)
        )
        await session.execute(
            update(IngestionJob).where(IngestionJob.status == "queued").values(status="done")
        )
        await session.commit()


def touch(paths: list[Path], rng: random.Random) -> None:
    for path in paths:
        path.write_bytes(page_of_text(rng) + b" Changed.")
        later = path.stat().st_mtime_ns + 2_000_000_000
        os.utime(path, ns=(later, later))


async def run(files: int, window: float) -> None:
    rng = random.Random(11)
    url = await fresh_database()
    embedder = LocalMiniLMEmbedder()
    try:
        with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as shared:
            root = Path(shared)
            paths = write_folder(root / "notes", files, rng)
            settings = build_settings(url, Path(data))
            settings = settings.model_copy(
                update={
                    "sources": SourceSettings(  # type: ignore[call-arg]
                        _env_file=None, folder_roots=[root]
                    )
                }
            )
            components, engine = build_components(settings, embedder)
            owner, source = await add_source(components, root / "notes")
            async with components.sessionmaker() as session:
                other = await new_user(session)
                await session.commit()

            first, progress = await sync_now(components, source)
            alone = model_alone(embedder, [p.read_text() for p in paths[:300]])
            async with running_worker(IngestionWorker(components)):
                started = time.perf_counter()
                await asyncio.sleep(window / 2)
                waits = []
                for _ in range(5):
                    tried = time.perf_counter()
                    waits.append(
                        await time_to_completed(components.sessionmaker, components, other, window)
                    )
                    await asyncio.sleep(max(0.0, window / 10 - (time.perf_counter() - tried)))
                elapsed = time.perf_counter() - started
                ingested = await completed_count(components.sessionmaker, owner.id)
            rate = ingested / elapsed
            await mark_completed(components, owner)

            jobs = await jobs_count(components)
            unchanged, again = await sync_now(components, source)
            unchanged_jobs = await jobs_count(components) - jobs

            touch(paths[:10], rng)
            for path in paths[10:20]:
                path.unlink()
            jobs = await jobs_count(components)
            changed, after = await sync_now(components, source)
            changed_jobs = await jobs_count(components) - jobs
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)

    print(f"Folder source of {files:,} one-paragraph files in {FOLDERS} folders; {machine()}")
    print(
        table(
            [
                "sync",
                "seconds",
                "items/s",
                "added",
                "changed",
                "removed",
                "unchanged",
                "jobs queued",
            ],
            [
                [
                    "first",
                    f"{first:.1f}",
                    f"{files / first:.0f}",
                    progress.get("added", 0),
                    0,
                    0,
                    0,
                    files,
                ],
                [
                    "unchanged again",
                    f"{unchanged:.1f}",
                    f"{files / unchanged:.0f}",
                    again.get("added", 0),
                    again.get("changed", 0),
                    again.get("removed", 0),
                    again.get("unchanged", 0),
                    unchanged_jobs,
                ],
                [
                    "10 changed, 10 deleted",
                    f"{changed:.1f}",
                    "",
                    after.get("added", 0),
                    after.get("changed", 0),
                    after.get("removed", 0),
                    after.get("unchanged", 0),
                    changed_jobs,
                ],
            ],
        )
    )
    print(
        f"Ingesting the first sync's documents, one worker, {window:.0f} s window: "
        f"{rate:.1f} docs/s against the model alone's {alone:.1f} ({rate / alone:.0%}); "
        "another user's one-page upload meanwhile, upload to completed: "
        f"p50 {percentile(waits, 50):.2f} s, max {max(waits):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=60.0)
    args = parser.parse_args()
    asyncio.run(run(args.files, args.window))


if __name__ == "__main__":
    main()
