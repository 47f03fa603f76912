"""A job belongs to one worker at a time (issue 13, item 11): heartbeats keep a slow job with
its worker, a takeover fences the old worker out, and writes can be repeated safely.

Workers claim with row locks, so these tests use real, separately committed sessions."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import WorkerSettings
from docchat.db import utcnow
from docchat.documents.models import Document, DocumentStatus, IngestionJob, JobStatus
from docchat.ingestion.worker import IngestionWorker, user_facing_reason
from docchat.kit.errors import UpstreamError
from docchat.main.components import Components
from docchat.retrieval import lexical
from docchat.retrieval.index import (
    BlockingVectorStore,
    Chunk,
    DocumentRef,
    VectorStoreUnavailable,
)
from tests.support.documents import upload
from tests.support.files import filler
from tests.support.users import auth_headers


async def _job(components: Components, document_id: uuid.UUID) -> IngestionJob:
    async with components.sessionmaker() as session:
        statement = select(IngestionJob).where(IngestionJob.document_id == document_id)
        return (await session.execute(statement)).scalar_one()


async def _document(components: Components, document_id: uuid.UUID) -> Document:
    async with components.sessionmaker() as session:
        document = await session.get(Document, document_id)
        assert document is not None
        return document


async def _drain(components: Components) -> None:
    """Jobs other tests left in the shared database are done first, so claims here are ours."""
    await IngestionWorker(components).run_until_idle()


async def _lexical_rows(components: Components, document_id: uuid.UUID) -> int:
    async with components.sessionmaker() as session:
        return await lexical.count_chunks(session, document_id)


def stale_after(components: Components) -> int:
    return components.settings.worker.stale_after_seconds


async def test_a_worker_whose_job_was_taken_over_writes_nothing(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    components = live_components
    await _drain(components)
    headers = await auth_headers(live_client)
    response = await upload(live_client, headers, "tides.md", filler("tides", 60).encode())
    document_id = uuid.UUID(response.json()["id"])
    stalled = IngestionWorker(components, worker_id="stalled")
    first = await stalled.claims.claim()
    assert first is not None and first.document_id == document_id
    # It stops sending heartbeats; once stale, another worker takes the job.
    async with components.sessionmaker() as session:
        await session.execute(
            update(IngestionJob)
            .where(IngestionJob.id == first.id)
            .values(heartbeat_at=utcnow() - timedelta(seconds=stale_after(components) + 60))
        )
        await session.commit()
    successor = IngestionWorker(components, worker_id="successor")
    second = await successor.claims.claim()
    assert second is not None and second.id == first.id and second.token != first.token

    # The stalled worker wakes up and carries on: every write it tries is refused.
    await stalled.process(first)
    job = await _job(components, document_id)
    assert job.status == JobStatus.running and job.claimed_by == "successor"
    document = await _document(components, document_id)
    assert document.status == DocumentStatus.processing and document.chunk_count is None
    assert await _lexical_rows(components, document_id) == 0

    await successor.process(second)
    document = await _document(components, document_id)
    assert document.status == DocumentStatus.completed and document.chunk_count
    assert await _lexical_rows(components, document_id) == document.chunk_count
    ref = DocumentRef(document.id, document.owner_id)
    assert components.vector_store.count(ref) == document.chunk_count
    job = await _job(components, document_id)
    assert job.status == JobStatus.done and job.attempts == 2


async def test_heartbeats_keep_a_slow_job_with_its_worker(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    components = live_components

    class SlowEmbedder:
        name = components.embedder.name
        dimension = components.embedder.dimension

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            time.sleep(0.4)
            return components.embedder.embed(texts)

    short = WorkerSettings(_env_file=None, heartbeat_seconds=0.2, stale_after_seconds=2)  # type: ignore[call-arg]
    one_at_a_time = components.settings.embedding.model_copy(update={"batch_size": 1})
    settings = components.settings.model_copy(update={"worker": short, "embedding": one_at_a_time})
    slow = dataclasses.replace(components, settings=settings, embedder=SlowEmbedder())
    await _drain(components)
    headers = await auth_headers(live_client)
    response = await upload(live_client, headers, "long.md", filler("glaciers", 80).encode())
    document_id = uuid.UUID(response.json()["id"])
    owner = IngestionWorker(slow, worker_id="owner")
    claim = await owner.claims.claim()
    assert claim is not None and claim.document_id == document_id
    working = asyncio.create_task(owner.process(claim))
    rival = IngestionWorker(slow, worker_id="rival")
    started = time.monotonic()
    # Far past the stale window, the rival finds nothing to take.
    while not working.done():
        assert await rival.run_once() is False
        await asyncio.sleep(0.3)
    assert time.monotonic() - started > short.stale_after_seconds
    job = await _job(components, document_id)
    assert job.status == JobStatus.done and job.attempts == 1 and job.claimed_by == "owner"
    assert (await _document(components, document_id)).status == DocumentStatus.completed


async def test_writing_a_documents_chunks_twice_keeps_one_row_each(
    session: AsyncSession, client: httpx.AsyncClient
) -> None:
    headers = await auth_headers(client)
    response = await upload(client, headers, "twice.md", b"Some words about rivers.")
    document_id = uuid.UUID(response.json()["id"])
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    chunks = [
        Chunk(document_id, index, f"river text {index}", None, uuid.UUID(me["id"]), "private", "t")
        for index in range(3)
    ]
    await lexical.add_chunks(session, chunks, "english")
    await lexical.add_chunks(session, chunks[1:], "english")  # a retried batch
    assert await lexical.count_chunks(session, document_id) == 3


def test_a_failure_the_owner_sees_never_quotes_internal_errors() -> None:
    leaked = DBAPIError("INSERT INTO document_chunks (text) VALUES ('secret')", {}, Exception())
    reason = user_facing_reason(leaked)
    assert reason == "an internal error occurred" and "INSERT" not in reason
    assert user_facing_reason(VectorStoreUnavailable("disk full at /srv")) == (
        "the vector store was unavailable"
    )
    assert user_facing_reason(UpstreamError("The embedding service failed")) == (
        "The embedding service failed"
    )


@dataclasses.dataclass(frozen=True)
class _CountingStore:
    """The real vector store, counting the deletes asked of it."""

    store: BlockingVectorStore
    deletes: list[uuid.UUID] = dataclasses.field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def delete_document(self, document: DocumentRef, except_version: int | None = None) -> None:
        self.deletes.append(document.id)
        self.store.delete_document(document, except_version)


async def test_a_reading_again_replaces_the_first_and_a_first_reading_clears_nothing(
    client: httpx.AsyncClient, components: Components
) -> None:
    await _drain(components)
    counting = _CountingStore(components.vector_store)
    headers = await auth_headers(client)
    response = await upload(client, headers, "tides.md", filler("tides", 40).encode())
    document_id = uuid.UUID(response.json()["id"])
    await IngestionWorker(dataclasses.replace(components, vector_store=counting)).run_until_idle()
    first = await _document(components, document_id)
    assert first.status == DocumentStatus.completed and first.chunk_count is not None
    # Nothing of a document never read can be in the indexes: no delete was asked.
    assert counting.deletes == []

    # Read again in bigger chunks (fewer of them): only the new ones are left in both indexes.
    bigger = components.settings.indexing.model_copy(
        update={"chunk_size": 4000, "chunk_overlap": 0}
    )
    rechunking = dataclasses.replace(
        components,
        settings=components.settings.model_copy(update={"indexing": bigger}),
        vector_store=counting,
    )
    assert (
        await client.post(f"/api/v1/documents/{document_id}/reprocess", headers=headers)
    ).is_success
    await IngestionWorker(rechunking).run_until_idle()
    second = await _document(components, document_id)
    assert second.status == DocumentStatus.completed
    assert second.chunk_count is not None and second.chunk_count < first.chunk_count
    assert counting.deletes == [document_id]
    ref = DocumentRef.of(second)
    assert await components.vector_index.count(ref) == second.chunk_count
    assert await _lexical_rows(components, document_id) == second.chunk_count
    async with components.sessionmaker() as session:
        statement = select(IngestionJob.attempts).where(IngestionJob.document_id == document_id)
        assert list((await session.execute(statement)).scalars()) == [1, 1]  # neither retried
