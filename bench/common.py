"""Shared plumbing for the benchmarks: a fresh migrated database and the real components."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from chromadb.api.shared_system_client import SharedSystemClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # so `tests.support` helpers are importable

from tests.support.database import alembic, create_database, drop_database

import docchat.main.components  # noqa: F401  (registers the vector stores)
from docchat.config import (
    AuthSettings,
    Environment,
    LLMSettings,
    Settings,
    WorkerSettings,
)
from docchat.db import create_engine, create_sessionmaker
from docchat.documents.storage import LocalFileStorage
from docchat.events.publisher import EventPublisher
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.main import telemetry
from docchat.main.components import Components, build_sandboxes, build_vector_store
from docchat.retrieval.index import VECTOR_STORES, BlockingVectorStore, Chunk, VectorStoreSettings
from docchat.retrieval.lexical import add_chunks


def machine() -> str:
    return f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}"


def _cpu_of(stat: str, children: bool) -> float:
    """Seconds of CPU in a /proc/PID/stat line: user and system, all threads (and, with
    `children`, those of its children that have exited)."""
    fields = stat.rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """The CPU a process has used so far (Linux's /proc)."""
    return _cpu_of(Path(f"/proc/{pid}/stat").read_text(), children=False)


def postgres_cpu_seconds() -> float | None:
    """The CPU every PostgreSQL process on this machine has used so far (other databases'
    work too), those that have exited included (the postmaster counts its reaped backends);
    None when none is visible (a server elsewhere, no /proc)."""
    total, seen = 0.0, False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            line = stat.read_text()
            if "(postgres)" in line:
                total, seen = total + _cpu_of(line, children=True), True
    return total if seen else None


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    return "\n".join(lines)


async def fresh_database() -> str:
    url = await create_database("docchat_bench")
    await alembic(url, "upgrade", "head")
    return url


__all__ = [
    "LLM",
    "ROOT",
    "AuthSettings",
    "Components",
    "EventPublisher",
    "LLMSettings",
    "LocalFileStorage",
    "Settings",
    "WorkerSettings",
    "build_components",
    "build_settings",
    "drop_database",
]


@contextlib.contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """A checkout of `revision` (a git worktree in a temporary folder), removed afterwards: to
    measure the code before a change beside the code after it, in one run."""
    git = shutil.which("git") or "git"
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            [git, "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
            check=True,
            capture_output=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                [git, "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True
            )


def build_settings(
    database_url: str, data_dir: Path, llm_url: str = "http://127.0.0.1:9/v1"
) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        environment=Environment.test,
        database_url=database_url,
        data_dir=data_dir,
        max_upload_mb=200,
        log_level="WARNING",
        auth=AuthSettings(_env_file=None, secret_key="bench-secret-key-0123456789-abcdefgh"),  # type: ignore[call-arg, arg-type]
        llm=LLMSettings(_env_file=None, base_url=llm_url, model="scripted-model", max_retries=0),  # type: ignore[call-arg]
        worker=WorkerSettings(_env_file=None, enabled=False),  # type: ignore[call-arg]
    )


def build_components(settings: Settings, embedder: Embedder) -> tuple[Components, object]:
    """The app's parts in this process, logging as `docchat serve` does."""
    telemetry.configure_logging(settings.log_level)
    engine = create_engine(settings.database_url)
    extractor, inline_reader = build_sandboxes(settings)
    components = Components(
        settings=settings,
        sessionmaker=create_sessionmaker(engine),
        embedder=embedder,
        vector_store=build_vector_store(settings, embedder),
        llm=LLM(settings.llm),
        storage=LocalFileStorage(settings.files_dir),
        publisher=EventPublisher(None, "bench"),
        extractor=extractor,
        inline_reader=inline_reader,
    )
    return components, engine


def start_server(
    database_url: str,
    llm_url: str,
    data_dir: Path,
    port: int,
    *,
    extra_env: dict[str, str] | None = None,
    code_root: Path = ROOT,
) -> subprocess.Popen[bytes]:
    """`docchat serve` (API and in-process worker) in a process of its own, as users run it:
    its worker too looks for jobs at the default pace. (Polling every 0.2 s, as the benches
    once did, cost an idle server 7 ms of CPU a second more, and the chat bench's server 41-42
    ms of CPU a message against 36-37.)

    `code_root` runs another checkout's code (to measure before and after a change)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(code_root / "backend"),
        "DATABASE_URL": database_url,
        "DATA_DIR": str(data_dir),
        "LLM_BASE_URL": llm_url,
        "LLM_MODEL": "scripted-model",
        "LOG_LEVEL": "WARNING",
        "AUTH_SECRET_KEY": "bench-secret-key-0123456789-abcdefgh",
        # The load generator signs up many users from one address; it is not an attacker.
        "AUTH_REGISTER_MAX_PER_ADDRESS": "100000",
        **(extra_env or {}),
    }
    command = [sys.executable, "-m", "docchat.main.cli", "serve", "--port", str(port)]
    return subprocess.Popen(
        command, env=env, cwd=code_root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


async def wait_ready(base: str, probe: str = "/readyz") -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                if (await client.get(f"{base}{probe}")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("server did not start")


# A document is unfinished while it waits for a worker (`queued`) and while one reads it.
UNFINISHED = ("queued", "processing")


async def unfinished_documents(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    """How many of the caller's documents are still queued or being processed."""
    total = 0
    for status in UNFINISHED:
        listed = await client.get(f"/api/v1/documents?status={status}&limit=1", headers=headers)
        listed.raise_for_status()
        total += int(listed.json()["total"])
    return total


async def write_chunks(
    store: BlockingVectorStore,
    sessionmaker: async_sessionmaker[AsyncSession],
    chunks: Sequence[Chunk],
    rng: np.random.Generator,
    dimension: int = 384,
) -> None:
    """Chunks written as the worker writes them, with random unit vectors for their embeddings:
    into the vector store and into the lexical index."""
    vectors = rng.normal(size=(len(chunks), dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.upsert(list(chunks), vectors.tolist())
    async with sessionmaker() as session:
        await add_chunks(session, chunks, "english")
        await session.commit()


async def record_completion(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    """What the worker records when a document completes (its chunk and word totals, which
    BM25's scope statistics read), then the tables as autovacuum keeps them: vacuumed (the
    word index's pending entries merged into it) and with fresh planner statistics. Without
    the vacuum, on a server where autovacuum is off, BM25 over a 100k-chunk scope measured
    twice as slow (p50 41 ms against 19, p95 117 against 29)."""
    async with sessionmaker() as session:
        await session.execute(
            text(
                "UPDATE documents d SET chunk_count = t.chunks, token_count = t.words FROM ("
                "SELECT document_id, count(*) AS chunks, sum(tokens) AS words "
                "FROM document_chunks GROUP BY document_id) t WHERE t.document_id = d.id"
            )
        )
        await session.commit()
    engine = sessionmaker.kw["bind"]
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await autocommit.execute(text("VACUUM ANALYZE"))


def open_store(data_dir: Path, embedding_model: str, dimension: int) -> BlockingVectorStore:
    """The configured vector store (VECTOR_STORE; Chroma by default) keeping its data in
    `data_dir`, as the app would build it."""
    settings = Settings(data_dir=data_dir)
    config = VectorStoreSettings(settings, embedding_model, dimension)
    return VECTOR_STORES.get(settings.vector_store)(config)


def _empty_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)


def schema_head() -> str:
    """The migration a database made now ends at."""
    return str(
        ScriptDirectory.from_config(AlembicConfig(str(ROOT / "alembic.ini"))).get_current_head()
    )


@dataclass
class BenchIndex:
    """A migrated database and a vector store keeping its data in `folder`: kept for later
    runs (`kept_index`) or removed after this one (`scratch_index`)."""

    sessionmaker: async_sessionmaker[AsyncSession]
    # Empty when the installation is new: the run builds it, puts in what later runs need
    # (its reader, how long the build took), then calls `keep`.
    notes: dict[str, Any]
    folder: Path
    url: str
    embedding_model: str
    dimension: int

    @functools.cached_property
    def store(self) -> BlockingVectorStore:
        """The folder's vector store, opened when first used."""
        return open_store(self.folder, self.embedding_model, self.dimension)

    def release_store(self) -> None:
        """Drop this process's client of the store, so that a server the bench starts is the
        only process with the folder open (an embedded Chroma is not shared between
        processes)."""
        self.__dict__.pop("store", None)
        SharedSystemClient.clear_system_cache()

    def keep(self) -> None:
        """Save the notes: later runs reuse the installation (even if this one fails after)."""
        notes = {**self.notes, "database_url": self.url, "schema": schema_head()}
        written = self.folder / "notes.json.tmp"
        written.write_text(json.dumps(notes, indent=2))
        written.replace(self.folder / "notes.json")


def _kept_notes(folder: Path) -> dict[str, Any]:
    """The notes of a kept installation made with today's migrations, or none."""
    saved = folder / "notes.json"
    notes: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    return notes if notes.get("schema", schema_head()) == schema_head() else {}


@contextlib.asynccontextmanager
async def kept_index(
    folder: Path, embedding_model: str, dimension: int
) -> AsyncIterator[BenchIndex]:
    """As `scratch_index`, but the database and the Chroma store stay, in `folder`, for later
    runs to reuse: a million-chunk build takes half an hour. A folder whose build never called
    `keep` (it failed or was stopped), or was made before a later migration, is built again
    from nothing. Drop the database named in the notes (`folder`/notes.json), and the folder,
    when done."""
    notes = _kept_notes(folder)
    if notes:
        url = notes["database_url"]
    else:
        for named in (folder / "database_url", folder / "notes.json"):
            if named.exists():  # the database of a build not to reuse
                text = named.read_text()
                stale = json.loads(text)["database_url"] if named.suffix == ".json" else text
                await drop_database(stale.strip())
        _empty_folder(folder)
        url = await fresh_database()
        (folder / "database_url").write_text(url)  # to drop it, should this build not finish
    engine = create_engine(url)
    try:
        kept = BenchIndex(
            create_sessionmaker(engine), notes, folder, url, embedding_model, dimension
        )
        yield kept
        kept.keep()
    finally:
        await engine.dispose()


def bench_index(
    folder: Path | None, embedding_model: str, dimension: int
) -> contextlib.AbstractAsyncContextManager[BenchIndex]:
    """The installation a bench builds: kept in `folder` (`kept_index`), or, without one, for
    this run only (`scratch_index`)."""
    if folder is None:
        return scratch_index(embedding_model, dimension)
    return kept_index(folder, embedding_model, dimension)


@contextlib.asynccontextmanager
async def scratch_index(embedding_model: str, dimension: int) -> AsyncIterator[BenchIndex]:
    """A fresh migrated database and an empty persistent Chroma store in a temporary folder,
    both removed afterwards."""
    url = await fresh_database()
    engine = create_engine(url)
    try:
        with tempfile.TemporaryDirectory() as name:
            sessionmaker = create_sessionmaker(engine)
            yield BenchIndex(sessionmaker, {}, Path(name), url, embedding_model, dimension)
    finally:
        await engine.dispose()
        await drop_database(url)
