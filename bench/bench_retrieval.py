"""Retrieval latency inside the service: query embedding + vector search with the scope
filter + context building, at 10k and 100k chunks owned by 100 users.

    .venv/bin/python bench/bench_retrieval.py [--queries 300]

The chunks' vectors are random unit vectors (embedding 100k real chunks would take most of an
hour here and does not change what a search costs); the queries are embedded for real.
Each query is scoped to one user's 10 documents, as the message flow does.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from bench.common import machine, median, percentile, table
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.retrieval.context import build_context
from docchat.retrieval.search import search
from docchat.retrieval.vectorstore import ChromaVectorStore, Chunk, DocumentRef

USERS, DOCUMENTS_PER_USER, DIMENSION = 100, 10, 384
QUESTIONS = [
    "When was the harbour bridge opened?",
    "What does the report say about the budget?",
    "Which ferry route runs in winter?",
    "Who keeps the lighthouse museum?",
    "How high was the storm tide last season?",
]


def fill(
    store: ChromaVectorStore, total: int, rng: np.random.Generator
) -> dict[uuid.UUID, list[uuid.UUID]]:
    owners = {uuid.uuid4(): [uuid.uuid4() for _ in range(DOCUMENTS_PER_USER)] for _ in range(USERS)}
    documents = [(owner, document) for owner, docs in owners.items() for document in docs]
    per_document = total // len(documents)
    batch: list[Chunk] = []
    for owner, document in documents:
        for index in range(per_document):
            text = (
                f"Passage {index} of document {document}: harbour records and council notes. " * 10
            )
            batch.append(
                Chunk(document, index, text[:1000], index // 3 + 1, owner, "private", "doc.pdf")
            )
            if len(batch) == 5000:
                vectors = rng.normal(size=(len(batch), DIMENSION)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                store.upsert(batch, vectors.tolist())
                batch = []
    if batch:
        vectors = rng.normal(size=(len(batch), DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.upsert(batch, vectors.tolist())
    return owners


async def measure(
    store: ChromaVectorStore,
    embedder: LocalMiniLMEmbedder,
    owners: dict[uuid.UUID, list[uuid.UUID]],
    queries: int,
) -> list[float]:
    pick = random.Random(1)
    timings = []
    for _ in range(queries):
        owner = pick.choice(list(owners))
        scope = [DocumentRef(document, owner) for document in owners[owner]]
        started = time.perf_counter()
        result = await search(
            embedder, store, pick.choice(QUESTIONS), scope, top_k=4, similarity_floor=-1.0
        )
        build_context(result.chunks, 3500)
        timings.append((time.perf_counter() - started) * 1000)
        assert result.unavailable is None and result.chunks
    return timings


async def main(queries: int) -> None:
    embedder = LocalMiniLMEmbedder()
    embedder.embed(["warm up"])
    rng = np.random.default_rng(3)
    rows = []
    for total in (10_000, 100_000):
        with tempfile.TemporaryDirectory() as folder:
            store = ChromaVectorStore(
                collection="bench",
                embedding_model=embedder.name,
                dimension=DIMENSION,
                path=Path(folder),
            )
            started = time.perf_counter()
            owners = fill(store, total, rng)
            load_seconds = time.perf_counter() - started
            timings = await measure(store, embedder, owners, queries)
            embed_only = []
            for question in QUESTIONS * 10:
                t = time.perf_counter()
                embedder.embed([question])
                embed_only.append((time.perf_counter() - t) * 1000)
            rows.append(
                [
                    f"{store.count():,}",
                    USERS,
                    f"{median(timings):.1f}",
                    f"{percentile(timings, 95):.1f}",
                    f"{median(embed_only):.1f}",
                    f"{load_seconds:.0f}",
                ]
            )
    print(
        f"Retrieval latency over {queries} queries, each scoped to one user's {DOCUMENTS_PER_USER} documents; {machine()}"
    )
    print(
        table(
            [
                "chunks",
                "users",
                "p50 ms",
                "p95 ms",
                "of which query embedding p50 ms",
                "index build s",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=300)
    asyncio.run(main(parser.parse_args().queries))
