"""Retrieval over a wide scope: a shared library of 100k chunks in every user's scope, more
chunks elsewhere in the installation, text with a natural vocabulary.

    .venv/bin/python -m bench.bench_wide_scope [--library 100000] [--elsewhere 100000]
        [--chunks-per-document 100 2 1] [--keep DIR] [--build bulk|worker]

Each `--chunks-per-document` is one shape of the same library, built and measured in turn and
printed side by side: 1,000 documents of 100 chunks (books, manuals), 50,000 of 2 and 100,000
of 1 (wikis, tickets, notes, e-mails: what shared libraries mostly hold).

The chunks' text is made of SQuAD dev sentences drawn at random (tens of thousands of
distinct words in a Zipf-like distribution, as real prose has), indexed for BM25 as the
worker does; their vectors are seeded random unit vectors (none of the figures rests on what
the library's vectors mean: the vector rows time the search, whatever it finds); the queries
are real SQuAD questions, embedded for real.

The library is written in bulk (`bench.bulk`: PostgreSQL's COPY, the languages told in side
processes and kept, the vectors written meanwhile): 631 s for the default shape on this 2-core
machine at a load average of 14 (2026-11-29), where the worker's path (`--build worker`: the
same rows and vectors, a batch at a time) takes 21 minutes or more there. Both give the same
rows, `tsvector`s and planner statistics, the same vectors under the same ids for the library,
and the same query plans (`bench.check_bulk_build`; docs/changelog.md, issue 68). A bulk build writes no vectors for
the other owners' chunks: a question searches only the collections of the owners in its scope,
so no figure reads them (they stay in PostgreSQL, where BM25's index holds every chunk). The library belongs to one owner and is shared with everyone, so the
scope of a question ("all I may read") is every document of the library; the other chunks
belong to 100 other owners and are in no scope. Rows: the scope query itself,
BM25 alone, and the retriever end to end (embed + search + context), vector-only and hybrid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import docchat.models  # noqa: F401  (every table, so foreign keys resolve)
from bench.bulk import chunk_addresses, write_chunks_in_bulk
from bench.common import (
    bench_index,
    machine,
    median,
    percentile,
    record_completion,
    table,
    write_chunks,
)
from docchat.documents.models import Document, DocumentStatus, Visibility
from docchat.documents.scopes import search_scope
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.retrieval.context import TokenBudget, build_context
from docchat.retrieval.index import BlockingVectorStore, Chunk, DocumentScope, ThreadedIndex
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.models import DocumentChunk
from docchat.retrieval.retriever import Retriever
from docchat.users.models import User

SQUAD = Path(__file__).parent / "datasets" / "squad-dev"
DIMENSION, CHUNK_CHARS, BATCH = 384, 1000, 2000
SHAPES = (100, 2, 1)
OTHER_OWNERS = 100
# How a library is written: in bulk (the default), or chunk batch by chunk batch as the worker
# writes them (to check that both give the same installation).
BULK, WORKER = "bulk", "worker"


def sentences() -> list[str]:
    pool: list[str] = []
    with (SQUAD / "corpus.jsonl").open() as lines:
        for line in lines:
            paragraph = json.loads(line)["text"]
            pool.extend(s for s in re.split(r"(?<=[.!?])\s+", paragraph) if len(s) > 20)
    return pool


def questions(count: int) -> list[str]:
    with (SQUAD / "queries.jsonl").open() as lines:
        every = [json.loads(line)["text"] for line in lines]
    return random.Random(5).sample(every, count)


def passage(pool: list[str], pick: random.Random) -> str:
    parts: list[str] = []
    while sum(len(part) + 1 for part in parts) < CHUNK_CHARS:
        parts.append(pick.choice(pool))
    return " ".join(parts)[:CHUNK_CHARS]


async def owner_with_documents(
    session: AsyncSession, documents: int, *, shared: bool
) -> tuple[User, list[uuid.UUID]]:
    user = User(email=f"bench-{uuid.uuid4().hex[:10]}@example.com", password_hash="x")
    session.add(user)
    await session.flush()
    ids = [uuid.uuid4() for _ in range(documents)]
    rows = [
        {
            "id": document_id,
            "owner_id": user.id,
            "visibility": Visibility.shared if shared else Visibility.private,
            "filename": f"doc-{index}.txt",
            "content_type": "text/plain",
            "size_bytes": 1,
            "sha256": "0" * 64,
            "storage_key": "bench",
            "status": DocumentStatus.completed,
        }
        for index, document_id in enumerate(ids)
    ]
    # Core inserts in batches: the ORM takes minutes for 100,000 documents.
    for start in range(0, len(rows), 5000):
        await session.execute(insert(Document), rows[start : start + 5000])
    return user, ids


async def fill(
    store: BlockingVectorStore,
    sessionmaker: async_sessionmaker[AsyncSession],
    owned: list[tuple[uuid.UUID, uuid.UUID]],
    pool: list[str],
    rng: np.random.Generator,
    chunks_per_document: int,
    method: str = BULK,
    searched: frozenset[uuid.UUID] | None = None,
) -> None:
    """Every document's chunks, written in bulk (`bench.bulk`) or as the worker writes them
    (`WORKER`, a batch at a time: the same rows and vectors, several times slower). In bulk,
    with `searched`, only those owners' chunks get vectors: a question searches the vectors of
    the owners in its scope only (a collection each), and no figure reads the others'."""
    pick = random.Random(11)
    chunks = [
        Chunk(document, index, passage(pool, pick), None, owner, "shared", "doc.txt")
        for owner, document, index in chunk_addresses(owned, chunks_per_document)
    ]
    if method == BULK:
        await write_chunks_in_bulk(
            store, sessionmaker, chunks, rng, DIMENSION, vector_owners=searched
        )
    else:
        for start in range(0, len(chunks), BATCH):
            await write_chunks(store, sessionmaker, chunks[start : start + BATCH], rng, DIMENSION)
    await record_completion(sessionmaker)


async def timed(
    runs: list[str], step: Callable[[str], Awaitable[object]], warm_up: int = 10
) -> list[float]:
    for question in runs[:warm_up]:
        await step(question)
    timings = []
    for question in runs:
        started = time.perf_counter()
        await step(question)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


ROWS = (
    "scope step",
    "BM25 alone (20 candidates)",
    "retriever, vector",
    "retriever, hybrid (default)",
)


async def scope_of_reader(
    sessionmaker: async_sessionmaker[AsyncSession], reader: User
) -> DocumentScope:
    """What a message's scope step does for "all I may read"."""
    async with sessionmaker() as session:
        return await search_scope(session, reader)


async def build(
    sessionmaker: async_sessionmaker[AsyncSession],
    store: BlockingVectorStore,
    library: int,
    elsewhere: int,
    chunks_per_document: int,
    method: str = BULK,
) -> uuid.UUID:
    """The library, the other owners' documents and a reader with none; the reader's id."""
    async with sessionmaker() as session:
        librarian, shelf = await owner_with_documents(
            session, library // chunks_per_document, shared=True
        )
        others = [
            await owner_with_documents(
                session, elsewhere // chunks_per_document // OTHER_OWNERS, shared=False
            )
            for _ in range(OTHER_OWNERS if elsewhere else 0)
        ]
        reader, _ = await owner_with_documents(session, 0, shared=False)
        await session.commit()
    owned = [(librarian.id, document) for document in shelf] + [
        (owner.id, document) for owner, documents in others for document in documents
    ]
    await fill(
        store,
        sessionmaker,
        owned,
        sentences(),
        np.random.default_rng(3),
        chunks_per_document,
        method,
        frozenset({librarian.id}),
    )
    return reader.id


async def measure_shape(
    embedder: LocalMiniLMEmbedder,
    library: int,
    elsewhere: int,
    chunks_per_document: int,
    asked: list[str],
    keep: Path | None,
    method: str = BULK,
) -> tuple[list[tuple[float, float]], str, int]:
    """p50 and p95 of each of `ROWS` over one shape of the library, how long its build took
    (when, and how: `method`) and the installation's chunk count. With `keep`, the
    installation is built in a folder of it once and reused by later runs."""
    folder = None if keep is None else keep / f"{library}-{elsewhere}-x{chunks_per_document}"
    async with bench_index(folder, embedder.name, DIMENSION) as kept:
        sessionmaker, store, notes = kept.sessionmaker, kept.store, kept.notes
        built = "by an earlier run" if notes else "now"
        if not notes:
            started = time.perf_counter()
            notes["reader"] = str(
                await build(sessionmaker, store, library, elsewhere, chunks_per_document, method)
            )
            notes["build_seconds"] = time.perf_counter() - started
            notes["method"] = method
            kept.keep()
        async with sessionmaker() as session:
            reader = await session.get_one(User, uuid.UUID(notes["reader"]))

        scope = await scope_of_reader(sessionmaker, reader)
        lexical = LexicalIndex(sessionmaker)
        index = ThreadedIndex(store)
        vector = Retriever(embedder, index, passages=lexical, similarity_floor=-1.0)
        hybrid = Retriever(
            embedder, index, passages=lexical, similarity_floor=-1.0, lexical=lexical
        )

        async def search(retriever: Retriever, question: str) -> None:
            result = await retriever.search(question, scope, 4)
            build_context(result.chunks, TokenBudget(3500))
            assert result.unavailable is None and result.chunks

        figures = []
        for step in (
            lambda _q: scope_of_reader(sessionmaker, reader),
            lambda q: lexical.search(scope, q, 20),
            lambda q: search(vector, q),
            lambda q: search(hybrid, q),
        ):
            timings = await timed(asked, step)
            figures.append((median(timings), percentile(timings, 95)))
        how = notes.get("method", WORKER)  # installations kept before bulk builds: the worker's
        async with sessionmaker() as session:
            # The chunks PostgreSQL holds: a bulk build gives vectors to the library's only.
            chunks = await session.scalar(select(func.count()).select_from(DocumentChunk))
        return figures, f"{notes['build_seconds']:.0f} s {built} ({how})", int(chunks or 0)


async def main(
    library: int,
    elsewhere: int,
    queries: int,
    shapes: list[int],
    keep: Path | None,
    method: str = BULK,
) -> None:
    embedder = LocalMiniLMEmbedder()
    embedder.embed(["warm up"])
    asked = questions(queries)
    columns, builds = [], []
    total = 0
    for chunks_per_document in shapes:
        figures, build, total = await measure_shape(
            embedder, library, elsewhere, chunks_per_document, asked, keep, method
        )
        columns.append(figures)
        builds.append(build)
    print(
        f"Wide scope: {library:,} chunks in scope (1 shared library), {total - library:,} "
        f"elsewhere, {queries} SQuAD questions; indexes built in {', '.join(builds)} "
        f"(bulk: the worker's rows by COPY, seeded random unit vectors, for the library's "
        f"chunks only); {machine()}"
    )
    headers = ["p50 / p95 ms"] + [f"{library // shape:,} docs x {shape}" for shape in shapes]
    rows = [
        [label] + [f"{column[row][0]:.1f} / {column[row][1]:.1f}" for column in columns]
        for row, label in enumerate(ROWS)
    ]
    print(table(headers, rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--library", type=int, default=100_000)
    parser.add_argument("--elsewhere", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--chunks-per-document", type=int, nargs="+", default=list(SHAPES), metavar="N"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build each installation in DIR once and reuse it in later runs (drop its "
        "database, named in DIR/*/notes.json, and DIR when done)",
    )
    parser.add_argument(
        "--build",
        choices=[BULK, WORKER],
        default=BULK,
        help="write the libraries in bulk (COPY, the default) or as the worker writes chunks "
        "(a batch at a time; to compare the two)",
    )
    arguments = parser.parse_args()
    asyncio.run(
        main(
            arguments.library,
            arguments.elsewhere,
            arguments.queries,
            arguments.chunks_per_document,
            arguments.keep,
            arguments.build,
        )
    )
