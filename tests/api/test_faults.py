"""Faults injected into real parts: the database going away under a running server, and a
worker killed with SIGKILL in the middle of a document."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.config import Settings, WorkerSettings
from docchat.db import create_sessionmaker
from docchat.documents import jobs_repository
from docchat.documents.models import Document, DocumentStatus, JobStatus
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import DocumentRef
from docchat.users.models import User
from tests.support.documents import document_and_job, wait_for_document
from tests.support.live_server import LiveServer
from tests.support.tcp_proxy import TcpProxy
from tests.support.users import auth_headers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def proxied_server(settings: Settings) -> Iterator[tuple[LiveServer, TcpProxy]]:
    host_port, name = settings.database_url.rsplit("@", 1)[1].split("/", 1)
    proxy = TcpProxy(host_port.split(":")[0], int(host_port.split(":")[1])).start()
    prefix = settings.database_url.rsplit("@", 1)[0]
    proxied = settings.model_copy(
        update={
            "database_url": f"{prefix}@127.0.0.1:{proxy.port}/{name}",
            "worker": WorkerSettings(_env_file=None, enabled=False),  # type: ignore[call-arg]
        }
    )
    server = LiveServer(proxied).start()
    yield server, proxy
    server.stop()
    proxy.stop()


async def test_database_outage_fails_cleanly_and_recovers(
    proxied_server: tuple[LiveServer, TcpProxy],
) -> None:
    server, proxy = proxied_server
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        assert (await client.get("/api/v1/users/me", headers=headers)).status_code == 200

        proxy.down()
        during = await client.get("/api/v1/users/me", headers=headers)
        assert during.status_code == 503
        assert during.json() == {"detail": "The database is unavailable; try again shortly"}
        assert (await client.get("/readyz")).status_code == 503
        assert (await client.get("/healthz")).status_code == 200

        proxy.up()
        # No restart of the service: the pool replaces its dead connections.
        after = await client.get("/api/v1/users/me", headers=headers)
        assert after.status_code == 200 and after.json()["email"].startswith("user-")
        assert (await client.get("/readyz")).json()["checks"]["database"]["ok"] is True


def _start_worker(settings: Settings, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "DATA_DIR": str(data_dir),
        "WORKER_POLL_SECONDS": "0.2",
        "WORKER_STALE_AFTER_SECONDS": "4",
        "WORKER_HEARTBEAT_SECONDS": "1",
        "EMBEDDING_BATCH_SIZE": "16",
    }
    # The worker's log stays in the test's folder for a post-mortem.
    with (data_dir / "worker.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "docchat.main.cli", "worker"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )


async def test_a_worker_killed_mid_document_is_replaced_and_nothing_is_stuck(
    settings: Settings, engine: AsyncEngine, tmp_path: Path
) -> None:
    # A committed document and job, as an upload leaves them.
    text = "\n\n".join(
        f"Paragraph {i} describes tide tables and harbour rules in detail. " * 8 for i in range(400)
    )
    files = tmp_path / "files"
    (files / "ab").mkdir(parents=True)
    (files / "ab" / "tides").write_text(text)
    async with create_sessionmaker(engine)() as session:
        user = User(email=f"kill-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
        session.add(user)
        await session.flush()
        document = Document(
            owner_id=user.id,
            filename="tides.txt",
            content_type="text/plain",
            size_bytes=len(text),
            sha256="0" * 64,
            storage_key="ab/tides",
        )
        session.add(document)
        await session.flush()
        await jobs_repository.enqueue(session, document)
        await session.commit()
        document_id = document.id

    first = _start_worker(settings, tmp_path)
    try:
        await wait_for_document(engine, document_id, lambda d: d.chunks_done > 0, seconds=120)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        first.kill()
    killed, job = await document_and_job(engine, document_id)
    assert killed.status == DocumentStatus.processing and killed.chunks_done < (
        killed.chunk_count or 0
    )
    assert job.status == JobStatus.running and job.attempts == 1

    second = _start_worker(settings, tmp_path)
    try:
        finished = await wait_for_document(
            engine, document_id, lambda d: d.status != DocumentStatus.processing, seconds=180
        )
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    _, job_state = await document_and_job(engine, document_id)
    assert finished.status == DocumentStatus.completed, (
        finished.error,
        job_state.attempts,
        job_state.claimed_by,
        job_state.last_error,
    )
    assert finished.chunks_done == finished.chunk_count
    _, job = await document_and_job(engine, document_id)
    assert job.status == JobStatus.done and job.attempts == 2
    # The retry replaced the half-written vectors: exactly one per chunk.
    store = ChromaVectorStore(
        collection=settings.indexing.collection,
        embedding_model=LocalMiniLMEmbedder.name,
        dimension=384,
        path=tmp_path / "chroma",
    )
    assert store.count(DocumentRef.of(finished)) == finished.chunk_count
