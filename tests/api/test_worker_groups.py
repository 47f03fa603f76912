"""Small files read together (issue 38): a lane takes the small files that follow in the
queue's rotation with the one it claims, and writes their text, vectors and completions in one
go; a file of its own that fails stays its own failure, and a failing shared step sends each
document the one-at-a-time way."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from sqlalchemy import select

from docchat.documents.models import Document, DocumentStatus, IngestionJob
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import Embedder
from docchat.main.components import Components
from docchat.retrieval import lexical
from docchat.retrieval.index import BlockingVectorStore, Chunk, DocumentRef
from tests.support.documents import upload
from tests.support.office_files import make_xlsx, replace_part
from tests.support.users import auth_headers


@dataclasses.dataclass(frozen=True)
class _CountingEmbedder:
    """The real embedding model, recording how many texts each call embeds."""

    embedder: Embedder
    calls: list[int] = dataclasses.field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
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
    counting = _CountingEmbedder(components.embedder)
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
