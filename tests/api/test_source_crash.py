"""A sync killed with SIGKILL half-way, in a real worker process, is finished by another
worker: no file brought in twice, no removal lost."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text, update

from docchat.db import create_engine, create_sessionmaker, utcnow
from docchat.documents.models import Document
from docchat.membership.models import Collection, CollectionMember, CollectionRole
from docchat.sources.models import Source, SourceItem, SourceState
from docchat.users.models import User
from tests.support.processes import Process, docchat_env, start_chroma, start_worker

FILES = 300


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Process]:
    logs = tmp_path / "logs"
    logs.mkdir()
    process = start_chroma(tmp_path / "chroma", logs)
    yield process
    process.stop()


async def _query(database_url: str, statement: object) -> object:
    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_sessionmaker(engine)() as session:
            result = await session.execute(statement)  # type: ignore[call-overload]
            value = result.scalar_one()
            await session.commit()
            return value
    finally:
        await engine.dispose()


async def _make_source(database_url: str, folder: Path) -> tuple[uuid.UUID, uuid.UUID]:
    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_sessionmaker(engine)() as session:
            owner = User(email=f"crash-{uuid.uuid4().hex[:8]}@example.com", password_hash="!")
            collection = Collection(name="Crash")
            session.add_all([owner, collection])
            await session.flush()
            session.add(
                CollectionMember(
                    collection_id=collection.id,
                    user_id=owner.id,
                    role=CollectionRole.owner,
                    accepted_at=utcnow(),
                )
            )
            source = Source(
                collection_id=collection.id,
                owner_id=owner.id,
                kind="folder",
                name="Crash",
                settings={"path": str(folder)},
                state=SourceState.idle,
                next_sync_at=utcnow(),
                progress={},
            )
            session.add(source)
            await session.commit()
            return source.id, owner.id
    finally:
        await engine.dispose()


async def _progress(database_url: str, source_id: uuid.UUID) -> tuple[str, dict[str, int]]:
    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_sessionmaker(engine)() as session:
            row = await session.get(Source, source_id)
            assert row is not None
            return str(row.state), dict(row.progress or {})
    finally:
        await engine.dispose()


async def _wait(
    database_url: str, source_id: uuid.UUID, done: object, worker: Process, seconds: float = 180
) -> dict[str, int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if worker.popen.poll() is not None:
            raise AssertionError(f"the worker exited:\n{worker.output()}")
        state, progress = await _progress(database_url, source_id)
        if done(state, progress):  # type: ignore[operator]
            return progress
        await asyncio.sleep(0.2)
    raise AssertionError(f"gave up waiting: {state} {progress}\n{worker.output()}")


def _kill(worker: Process) -> None:
    worker.popen.kill()  # SIGKILL: no cleanup, no release of the claim
    worker.popen.wait()


async def test_a_sync_killed_mid_way_is_finished_by_another_worker(
    database_url: str, chroma: Process, tmp_path: Path
) -> None:
    folder = tmp_path / "shared" / "notes"
    folder.mkdir(parents=True)
    for number in range(FILES):
        (folder / f"note-{number:03d}.md").write_text(f"# Note {number}\n\nRoom {number} is free.")
    source_id, owner_id = await _make_source(database_url, folder)
    env = docchat_env(
        DATABASE_URL=database_url,
        DATA_DIR=str(tmp_path / "data"),
        CHROMA_URL=str(chroma.url),
        SOURCES_FOLDER_ROOTS=json.dumps([str(tmp_path / "shared")]),
        SOURCES_POLL_SECONDS="0.3",
        WORKER_HEARTBEAT_SECONDS="1",
        WORKER_STALE_AFTER_SECONDS="3",
        AUTH_SECRET_KEY="crash-test-signing-key-0123456789-abcdef",
    )
    logs = tmp_path / "logs"
    live = select(func.count(Document.id)).where(
        Document.owner_id == owner_id, Document.deleted_at.is_(None)
    )
    items = select(func.count(SourceItem.id)).where(SourceItem.source_id == source_id)

    first = start_worker("first", env, logs)
    try:
        await _wait(database_url, source_id, lambda s, p: p.get("added", 0) >= 30, first)
        _kill(first)
        state, progress = await _progress(database_url, source_id)
        assert state == "syncing" and progress["added"] < FILES, "killed mid-way"
        second = start_worker("second", env, logs)
        try:
            await _wait(database_url, source_id, lambda s, p: s == "idle", second)
            assert await _query(database_url, live) == FILES
            assert await _query(database_url, items) == FILES

            # Now removals: 100 files go, the sync is killed while removing them.
            for number in range(100):
                (folder / f"note-{number:03d}.md").unlink()
            await _query(
                database_url,
                update(Source)
                .where(Source.id == source_id)
                .values(next_sync_at=utcnow())
                .returning(Source.id),
            )
            await _wait(database_url, source_id, lambda s, p: p.get("removed", 0) >= 10, second)
            _kill(second)
        finally:
            second.stop()
        third = start_worker("third", env, logs)
        try:
            await _wait(
                database_url,
                source_id,
                lambda s, p: s == "idle" and p.get("removed", 0) + p.get("unchanged", 0) > 0,
                third,
            )
        finally:
            third.stop()
        assert await _query(database_url, live) == FILES - 100
        assert await _query(database_url, items) == FILES - 100
        duplicates = select(func.count()).select_from(
            select(Document.filename)
            .where(Document.owner_id == owner_id, Document.deleted_at.is_(None))
            .group_by(Document.filename)
            .having(func.count() > 1)
            .subquery()
        )
        assert await _query(database_url, duplicates) == 0
        assert await _query(database_url, text("SELECT 1")) == 1
    finally:
        first.stop()
