"""Small files read together (issue 38): a lane takes the small files that follow in the
queue's rotation with the one it claims, and writes their text, vectors and completions in one
go; a file of its own that fails stays its own failure, and a failing shared step sends each
document the one-at-a-time way."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus, IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import Embedder
from docchat.main.components import Components
from docchat.retrieval import lexical
from docchat.retrieval.index import BlockingVectorStore, Chunk, DocumentRef
from tests.support.documents import upload
from tests.support.office_files import make_xlsx, replace_part
from tests.support.users import auth_headers


@dataclasses.dataclass
class _WatchedEmbedder:
    """The real embedding model, recording how many texts each call embeds; a call for which
    `held` (given those counts, this call's last) is true waits until `opened` is set."""

    embedder: Embedder
    held: Callable[[list[int]], bool] = lambda calls: False
    calls: list[int] = dataclasses.field(default_factory=list)
    entered: threading.Event = dataclasses.field(default_factory=threading.Event)
    opened: threading.Event = dataclasses.field(default_factory=threading.Event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        if self.held(self.calls):
            self.entered.set()
            self.opened.wait(30)
        return self.embedder.embed(texts)


@dataclasses.dataclass(frozen=True)
class _OneDocumentAtATimeStore:
    """The real vector store, refusing a write that holds more than one document's chunks."""

    store: BlockingVectorStore

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None:
        if len({chunk.document_id for chunk in chunks}) > 1:
            raise RuntimeError("the store refused a write of several documents")
        self.store.upsert(chunks, embeddings)


def _grouping(components: Components, size: int, max_bytes: int = 16_384) -> Components:
    worker = components.settings.worker.model_copy(
        update={"group_size": size, "group_max_bytes": max_bytes}
    )
    return dataclasses.replace(
        components, settings=components.settings.model_copy(update={"worker": worker})
    )


async def _statuses(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
    return {item["filename"]: item["status"] for item in listed}


async def _indexed(components: Components, document_id: str) -> tuple[int, int, int]:
    """The document's chunk count and the vectors and lexical rows the indexes hold of it."""
    async with components.sessionmaker() as session:
        document = await session.get(Document, uuid.UUID(document_id))
        assert document is not None and document.chunk_count is not None
        rows = await lexical.count_chunks(session, document.id)
    vectors = await components.vector_index.count(DocumentRef.of(document))
    return document.chunk_count, vectors, rows


async def _attempts(components: Components, document_id: str) -> list[int]:
    async with components.sessionmaker() as session:
        statement = select(IngestionJob.attempts).where(
            IngestionJob.document_id == uuid.UUID(document_id)
        )
        return list((await session.execute(statement)).scalars())


async def test_small_files_are_read_together_in_the_queues_rotation(
    client: httpx.AsyncClient, components: Components
) -> None:
    await IngestionWorker(components).run_until_idle()  # other tests' leftovers first
    bulk, single = await auth_headers(client), await auth_headers(client)
    ids = {}
    for number, text in enumerate([b"Tides rise twice a day.", b"x" * 600, b"Moons pull seas."]):
        ids[f"bulk-{number}.md"] = (await upload(client, bulk, f"bulk-{number}.md", text)).json()
    ids["mine.md"] = (await upload(client, single, "mine.md", b"Herons wade at dawn.")).json()
    counting = _WatchedEmbedder(components.embedder)
    # bulk-1 is over the group's size limit: the group ends before it.
    worker = IngestionWorker(dataclasses.replace(_grouping(components, 3, 500), embedder=counting))

    assert await worker.run_once()
    assert await _statuses(client, single) == {"mine.md": "completed"}
    assert await _statuses(client, bulk) == {
        "bulk-0.md": "completed",
        "bulk-1.md": "queued",
        "bulk-2.md": "queued",
    }
    assert counting.calls == [2]  # one model run for both documents
    for name in ("bulk-0.md", "mine.md"):
        assert await _indexed(components, ids[name]["id"]) == (1, 1, 1)
    # The big file's claim was undone, not counted as an attempt.
    assert await _attempts(components, ids["bulk-1.md"]["id"]) == [0]

    assert await worker.run_until_idle() == 2
    assert set((await _statuses(client, bulk)).values()) == {"completed"}
    assert await _attempts(components, ids["bulk-1.md"]["id"]) == [1]


async def test_a_file_that_cannot_be_read_fails_alone_in_its_group(
    client: httpx.AsyncClient, components: Components
) -> None:
    await IngestionWorker(components).run_until_idle()
    headers = await auth_headers(client)
    damaged = replace_part(make_xlsx({"Data": [["a"], [1]]}), "xl/styles.xml", b"<x")
    await upload(client, headers, "first.md", b"Otters hold hands while they sleep.")
    await upload(client, headers, "damaged.xlsx", damaged)
    await upload(client, headers, "last.md", b"Owls turn their heads far round.")

    assert await IngestionWorker(_grouping(components, 8)).run_until_idle() == 3
    listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
    outcome = {item["filename"]: (item["status"], item["error"]) for item in listed}
    assert outcome == {
        "first.md": ("completed", None),
        "damaged.xlsx": ("failed", "The Excel file could not be read; it looks damaged"),
        "last.md": ("completed", None),
    }


async def test_a_shared_step_that_fails_sends_each_document_alone(
    client: httpx.AsyncClient, components: Components
) -> None:
    await IngestionWorker(components).run_until_idle()
    headers = await auth_headers(client)
    ids = [
        (await upload(client, headers, f"note-{n}.md", f"Note {n} on kites.".encode())).json()["id"]
        for n in range(3)
    ]
    refusing = dataclasses.replace(
        _grouping(components, 8), vector_store=_OneDocumentAtATimeStore(components.vector_store)
    )
    worker = IngestionWorker(refusing)

    assert await worker.run_once()
    statuses = await _statuses(client, headers)
    assert statuses == {f"note-{n}.md": "completed" for n in range(3)}
    for document_id in ids:
        # Written again alone (the group had written its text): exactly one chunk each, and
        # the group's failure counted as no attempt.
        assert await _indexed(components, document_id) == (1, 1, 1)
        assert await _attempts(components, document_id) == [1]
        async with components.sessionmaker() as session:
            document = await session.get(Document, uuid.UUID(document_id))
            assert document is not None and document.status == DocumentStatus.completed


async def _queue_notes(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, topic: str
) -> list[str]:
    return [
        (await upload(client, headers, f"{topic}-{n}.md", f"{topic} note {n}.".encode())).json()[
            "id"
        ]
        for n in range(count)
    ]


async def test_a_worker_stopped_mid_group_hands_every_document_back(
    client: httpx.AsyncClient, components: Components
) -> None:
    await IngestionWorker(components).run_until_idle()
    headers = await auth_headers(client)
    ids = await _queue_notes(client, headers, 3, "gulls")
    gated = _WatchedEmbedder(components.embedder, held=lambda calls: calls[-1] > 1)
    worker = IngestionWorker(dataclasses.replace(_grouping(components, 8), embedder=gated))
    running = asyncio.create_task(worker.run_once())
    try:
        assert await asyncio.to_thread(gated.entered.wait, 30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    finally:
        gated.opened.set()
    for document_id in ids:  # queued again, the attempt not counted
        assert await _attempts(components, document_id) == [0]
    assert set((await _statuses(client, headers)).values()) == {"queued"}
    assert await IngestionWorker(components).run_until_idle() == 3
    assert set((await _statuses(client, headers)).values()) == {"completed"}


@dataclasses.dataclass(frozen=True)
class _SlowAloneEmbedder:
    """The real model, taking `seconds` longer for a single document's text."""

    embedder: Embedder
    seconds: float

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) == 1:
            time.sleep(self.seconds)
        return self.embedder.embed(texts)


async def test_documents_waiting_to_go_alone_keep_their_claims(
    live_client: httpx.AsyncClient, live_components: Components
) -> None:
    # Separately committed sessions: the two workers' claims race as in production.
    await IngestionWorker(live_components).run_until_idle()
    headers = await auth_headers(live_client)
    ids = await _queue_notes(live_client, headers, 3, "storks")
    short = live_components.settings.worker.model_copy(
        update={"heartbeat_seconds": 0.5, "stale_after_seconds": 2, "group_size": 8}
    )
    settings = live_components.settings.model_copy(update={"worker": short})
    quick = dataclasses.replace(live_components, settings=settings)
    # The group's write is refused, so the three go alone, each 1.5 s in the model: the last
    # starts past the stale window, and only its heartbeats keep a rival worker off it.
    failing = dataclasses.replace(
        quick,
        vector_store=_OneDocumentAtATimeStore(live_components.vector_store),
        embedder=_SlowAloneEmbedder(live_components.embedder, 1.5),
    )
    worker = IngestionWorker(failing)
    claimed = await worker.claims.claim_group()
    assert sorted(str(job.document_id) for job in claimed) == sorted(ids)
    working = asyncio.create_task(worker.groups.process(claimed))
    rival = IngestionWorker(quick)
    while not working.done():
        await rival.run_once()  # what other tests left behind, or one of ours gone stale
        await asyncio.sleep(0.3)
    await working
    for document_id in ids:
        assert await _indexed(live_components, document_id) == (1, 1, 1)
        async with live_components.sessionmaker() as session:
            statement = select(IngestionJob.attempts, IngestionJob.claimed_by).where(
                IngestionJob.document_id == uuid.UUID(document_id)
            )
            assert list((await session.execute(statement)).all()) == [(1, worker.worker_id)]
    for document_id in ids:
        await live_client.delete(f"/api/v1/documents/{document_id}", headers=headers)


@dataclasses.dataclass
class _FailingOnceStore:
    """The real vector store, whose first document delete fails."""

    store: BlockingVectorStore
    failed: bool = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def delete_document(self, document: DocumentRef, except_version: int | None = None) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("the vector store blinked")
        self.store.delete_document(document, except_version)


async def test_a_completed_group_stays_completed_when_a_cleanup_fails(
    client: httpx.AsyncClient, components: Components, monkeypatch: pytest.MonkeyPatch
) -> None:
    await IngestionWorker(components).run_until_idle()
    headers = await auth_headers(client)
    ids = await _queue_notes(client, headers, 3, "cranes")
    completing = documents_repository.mark_completed

    async def deleted_at_the_last_moment(
        session: AsyncSession, document_id: uuid.UUID, chunk_count: int
    ) -> bool:
        """The owner deletes the last document just as its completion is written."""
        if str(document_id) == ids[2]:
            deleted = update(Document).where(Document.id == document_id)
            await session.execute(deleted.values(deleted_at=utcnow()))
        return await completing(session, document_id, chunk_count)

    monkeypatch.setattr(documents_repository, "mark_completed", deleted_at_the_last_moment)
    # Removing the deleted document's vectors after the completions fails once: the two
    # completed must keep theirs, and nothing may be read again.
    failing = _FailingOnceStore(components.vector_store)
    worker = IngestionWorker(dataclasses.replace(_grouping(components, 8), vector_store=failing))
    assert await worker.run_until_idle() == 3
    assert failing.failed
    for document_id in ids[:2]:
        assert await _indexed(components, document_id) == (1, 1, 1)
        assert await _attempts(components, document_id) == [1]
    completed = {"cranes-0.md": "completed", "cranes-1.md": "completed"}
    assert await _statuses(client, headers) == completed


async def test_a_worker_stopped_while_a_group_goes_alone_hands_back_what_is_left(
    client: httpx.AsyncClient, components: Components
) -> None:
    await IngestionWorker(components).run_until_idle()
    headers = await auth_headers(client)
    ids = await _queue_notes(client, headers, 3, "ibis")
    holding = _WatchedEmbedder(  # the second document that goes alone is held
        components.embedder, held=lambda calls: calls[-1] == 1 and calls.count(1) == 2
    )
    refusing = dataclasses.replace(
        _grouping(components, 8),
        vector_store=_OneDocumentAtATimeStore(components.vector_store),
        embedder=holding,
    )
    running = asyncio.create_task(IngestionWorker(refusing).run_once())
    try:
        assert await asyncio.to_thread(holding.entered.wait, 30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    finally:
        holding.opened.set()
    # The first went alone and completed; the second was stopped in its own processing and
    # the third while it waited: both queued again, their attempts not counted.
    assert await _statuses(client, headers) == {
        "ibis-0.md": "completed",
        "ibis-1.md": "queued",
        "ibis-2.md": "queued",
    }
    assert [await _attempts(components, i) for i in ids] == [[1], [0], [0]]
    assert await IngestionWorker(components).run_until_idle() == 2
