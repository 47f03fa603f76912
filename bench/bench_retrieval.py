"""Retrieval latency inside the service: query embedding + search with the scope filter +
context building, at 10k and 100k chunks owned by 100 users, vector-only and hybrid.

    .venv/bin/python -m bench.bench_retrieval [--queries 300]

The chunks' vectors are random unit vectors (embedding 100k real chunks would take most of an
hour here and does not change what a search costs); their text is varied generated prose,
indexed for BM25 in a fresh PostgreSQL database as the worker does; the queries are embedded
for real. Each query is scoped to one user's 10 documents, as the message flow does; each
user's documents are in a collection of theirs, which the headers name.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import docchat.models  # noqa: F401  (every table, so foreign keys resolve)
from bench.bench_ingestion import prose
from bench.common import (
    machine,
    median,
    percentile,
    record_completion,
    scratch_index,
    table,
    write_chunks,
)
from docchat.db import utcnow
from docchat.documents.models import Document, DocumentStatus
from docchat.documents.passage_identity import StoredIdentities
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.membership.models import (
    Collection,
    CollectionDocument,
    CollectionMember,
    CollectionRole,
)
from docchat.retrieval.context import TokenBudget, build_context, documents_of, format_context
from docchat.retrieval.index import BlockingVectorStore, Chunk, DocumentRef, ThreadedIndex
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.retriever import Retriever
from docchat.users.models import User

USERS, DOCUMENTS_PER_USER, DIMENSION = 100, 10, 384
QUESTIONS = [
    "When was the harbour bridge opened?",
    "What does the report say about the budget?",
    "Which ferry route runs in winter?",
    "Who keeps the lighthouse museum?",
    "How high was the storm tide last season?",
]


async def owners_in_database(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """100 users with 10 completed documents each, as rows the lexical index can refer to."""
    owners: dict[uuid.UUID, list[uuid.UUID]] = {}
    async with sessionmaker() as session:
        for number in range(USERS):
            user = User(
                email=f"bench-{number}-{uuid.uuid4().hex[:6]}@example.com", password_hash="x"
            )
            session.add(user)
            await session.flush()
            documents = [
                Document(
                    owner_id=user.id,
                    filename=f"doc-{index}.pdf",
                    content_type="application/pdf",
                    size_bytes=1,
                    sha256="0" * 64,
                    storage_key="bench",
                    status=DocumentStatus.completed,
                )
                for index in range(DOCUMENTS_PER_USER)
            ]
            session.add_all(documents)
            shelf = Collection(name=f"Shelf {number}", created_by=user.id)
            session.add(shelf)
            await session.flush()
            session.add(
                CollectionMember(
                    collection_id=shelf.id,
                    user_id=user.id,
                    role=CollectionRole.owner,
                    accepted_at=utcnow(),
                )
            )
            session.add_all(
                CollectionDocument(collection_id=shelf.id, document_id=d.id, owner_id=user.id)
                for d in documents
            )
            await session.flush()
            owners[user.id] = [document.id for document in documents]
        await session.commit()
    return owners


async def fill(
    store: BlockingVectorStore,
    sessionmaker: async_sessionmaker[AsyncSession],
    owners: dict[uuid.UUID, list[uuid.UUID]],
    total: int,
    rng: np.random.Generator,
) -> None:
    documents = [(owner, document) for owner, docs in owners.items() for document in docs]
    per_document = total // len(documents)
    words = random.Random(11)
    batch: list[Chunk] = []

    async def flush() -> None:
        await write_chunks(store, sessionmaker, batch, rng, DIMENSION)
        batch.clear()

    for owner, document in documents:
        for index in range(per_document):
            passage = prose(words, 1000)[:1000]
            batch.append(
                Chunk(document, index, passage, index // 3 + 1, owner, "private", "doc.pdf")
            )
            if len(batch) == 2000:
                await flush()
    if batch:
        await flush()
    await record_completion(sessionmaker)


async def measure(
    retriever: Retriever,
    owners: dict[uuid.UUID, list[uuid.UUID]],
    queries: int,
    identities: StoredIdentities | None = None,
) -> tuple[list[float], list[float]]:
    """Each search's time, with its context built (and with `identities`, its headers read
    and the context formatted); and the time of the headers' lookup alone."""
    pick = random.Random(1)
    timings, lookups = [], []
    for _ in range(queries):
        owner = pick.choice(list(owners))
        scope = [DocumentRef(document, owner) for document in owners[owner]]
        started = time.perf_counter()
        result = await retriever.search(pick.choice(QUESTIONS), scope, 4)
        entries = build_context(result.chunks, TokenBudget(3500))
        if identities is not None:
            looked_up = time.perf_counter()
            known = await identities.identities(documents_of(entries), owner)
            lookups.append((time.perf_counter() - looked_up) * 1000)
            assert all(identity.collections for identity in known.values())
            format_context(entries, known)
        timings.append((time.perf_counter() - started) * 1000)
        assert result.unavailable is None and result.chunks
    return timings, lookups


async def main(queries: int, sizes: list[int]) -> None:
    embedder = LocalMiniLMEmbedder()
    embedder.embed(["warm up"])
    rng = np.random.default_rng(3)
    rows = []
    for total in sizes:
        async with scratch_index(embedder.name, DIMENSION) as scratch:
            sessionmaker, store = scratch.sessionmaker, scratch.store
            started = time.perf_counter()
            owners = await owners_in_database(sessionmaker)
            await fill(store, sessionmaker, owners, total, rng)
            load_seconds = time.perf_counter() - started
            lexical = LexicalIndex(sessionmaker)
            index = ThreadedIndex(store)
            vector = Retriever(embedder, index, passages=lexical, similarity_floor=-1.0)
            hybrid = Retriever(
                embedder, index, passages=lexical, similarity_floor=-1.0, lexical=lexical
            )
            identities = StoredIdentities(sessionmaker)
            for label, retriever, headers in (
                ("vector", vector, None),
                ("hybrid", hybrid, None),
                ("hybrid + headers", hybrid, identities),
            ):
                await measure(retriever, owners, 20, headers)  # warm up
                timings, lookups = await measure(retriever, owners, queries, headers)
                rows.append(
                    [
                        f"{store.count():,}",
                        USERS,
                        label,
                        f"{median(timings):.1f}",
                        f"{percentile(timings, 95):.1f}",
                        f"{median(lookups):.2f} / {percentile(lookups, 95):.2f}" if lookups else "",
                        f"{load_seconds:.0f}",
                    ]
                )
    embed_only = []
    for question in QUESTIONS * 20:
        started = time.perf_counter()
        embedder.embed([question])
        embed_only.append((time.perf_counter() - started) * 1000)
    print(
        f"Retrieval latency over {queries} queries, each scoped to one user's {DOCUMENTS_PER_USER} documents; {machine()}"
    )
    print(
        table(
            [
                "chunks",
                "users",
                "search",
                "p50 ms",
                "p95 ms",
                "headers p50 / p95 ms",
                "index build s",
            ],
            rows,
        )
    )
    print(f"of which query embedding alone: p50 {median(embed_only):.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    arguments = parser.parse_args()
    asyncio.run(main(arguments.queries, arguments.sizes))
