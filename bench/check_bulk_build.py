"""Check that a library written in bulk is the library the worker's path writes.

    .venv/bin/python -m bench.check_bulk_build [--library 5000] [--elsewhere 5000]
        [--chunks-per-document 1] [--queries 50]

Builds one shape of `bench_wide_scope`'s installation three times, each on a scratch database
and store: twice as the worker writes (`--build worker`, a batch at a time) and once in bulk
(`bench.bulk`). Then compares what the benches read: the row counts, every chunk row (text,
word count, language, `tsvector`), the tables' sizes and planner statistics after the vacuum,
the library's vectors, and, for real SQuAD questions, BM25's plans (PostgreSQL's
`auto_explain`; costs, ids and figures left out), BM25's ranking and the retriever's answers
(passages and scores, vector and hybrid). The second worker's build shows what differs
between two builds of the same kind: Chroma's index is approximate and built by several
threads, so which random vectors are nearest a question may differ from build to build.
Prints each check with the three builds side by side, and the build times.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import docchat.models  # noqa: F401  (every table, so foreign keys resolve)
from bench.bench_wide_scope import BULK, DIMENSION, WORKER, build, questions, scope_of_reader
from bench.common import BenchIndex, scratch_index, table
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import DocumentScope, ThreadedIndex
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.retriever import Retriever
from docchat.users.models import User

# Every chunk row, as BM25 and the passages read it, in one digest (ids left out: they are new
# in each build).
_ROWS_DIGEST = text(
    """
SELECT count(*) AS chunks, md5(string_agg(r.digest, '' ORDER BY r.digest)) AS digest
FROM (SELECT md5(concat_ws('|', c.text, c.tokens, c.language, CAST(c.tsv AS text),
                           c.page, c.location, d.visibility, d.status)) AS digest
      FROM document_chunks c JOIN documents d ON d.id = c.document_id) AS r
"""
)
_SHAPE = text(
    """
SELECT (SELECT count(*) FROM documents) AS documents,
       (SELECT count(DISTINCT owner_id) FROM documents) AS owners,
       (SELECT sum(chunk_count) FROM documents) AS counted_chunks,
       (SELECT sum(token_count) FROM documents) AS counted_words,
       (SELECT relpages FROM pg_class WHERE relname = 'document_chunks') AS chunk_pages,
       (SELECT reltuples FROM pg_class WHERE relname = 'document_chunks') AS chunk_tuples,
       (SELECT relpages FROM pg_class WHERE relname = 'ix_document_chunks_tsv') AS gin_pages,
       (SELECT md5(CAST(most_common_elems AS text) || CAST(most_common_elem_freqs AS text))
        FROM pg_stats WHERE tablename = 'document_chunks' AND attname = 'tsv') AS word_statistics
"""
)
_LIBRARIAN = text("SELECT owner_id FROM documents WHERE visibility = 'shared' LIMIT 1")
# What a plan names that differs between two builds of the same library.
_VARYING = re.compile(
    r"\(cost=[^)]*\)|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|Duration: [0-9.]+ ms|'[^']*'|\b\d+(\.\d+)?\b"
)


@dataclass
class Built:
    """One build: its installation, its reader, what PostgreSQL planned for it."""

    index: BenchIndex
    reader: User
    seconds: float
    plans: list[str] = field(default_factory=list)


def explain_plans(sessionmaker: async_sessionmaker[AsyncSession], plans: list[str]) -> None:
    """Have PostgreSQL send the plan of every statement of this engine's connections as a
    notice (`auto_explain`), into `plans`."""
    engine = sessionmaker.kw["bind"].sync_engine

    @event.listens_for(engine, "connect")
    def explain(connection: Any, _record: Any) -> None:
        driver = connection.driver_connection
        driver.add_log_listener(lambda _c, message: plans.append(str(message.message)))
        cursor = connection.cursor()
        for setting in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_level = 'notice'",
            "SET client_min_messages = 'notice'",
        ):
            cursor.execute(setting)
        cursor.close()


def plan_shape(plan: str) -> str:
    return _VARYING.sub("_", plan)


@contextlib.asynccontextmanager
async def built(
    embedder: LocalMiniLMEmbedder, method: str, library: int, elsewhere: int, per_document: int
) -> AsyncIterator[Built]:
    async with scratch_index(embedder.name, DIMENSION) as index:
        started = time.perf_counter()
        reader_id = await build(
            index.sessionmaker, index.store, library, elsewhere, per_document, method
        )
        seconds = time.perf_counter() - started
        await index.sessionmaker.kw["bind"].dispose()  # the next connections explain
        async with index.sessionmaker() as session:
            reader = await session.get_one(User, reader_id)
        result = Built(index, reader, seconds)
        explain_plans(index.sessionmaker, result.plans)
        yield result


async def answers(
    embedder: LocalMiniLMEmbedder, side: Built, asked: Sequence[str]
) -> dict[str, list[list[tuple[str, float]]]]:
    """BM25's top 20 and the retriever's top 4 (vector, hybrid) for each question, as
    (passage, score); and BM25's plans."""
    sessionmaker = side.index.sessionmaker
    scope: DocumentScope = await scope_of_reader(sessionmaker, side.reader)
    lexical = LexicalIndex(sessionmaker)
    index = ThreadedIndex(side.index.store)
    vector = Retriever(embedder, index, passages=lexical, similarity_floor=-1.0)
    hybrid = Retriever(embedder, index, passages=lexical, similarity_floor=-1.0, lexical=lexical)
    found: dict[str, list[list[tuple[str, float]]]] = {
        "BM25 top 20": [],
        "vector top 4": [],
        "hybrid top 4": [],
    }
    for question in asked:
        side.plans.clear()
        hits = await lexical.search(scope, question, 20)
        found["BM25 top 20"].append([(h.chunk.text, round(h.score, 4)) for h in hits])
        # The scores alone: equal scores come in document id order, which each build draws anew.
        found.setdefault("BM25 top 20 scores", []).append([("", round(h.score, 4)) for h in hits])
        found.setdefault("BM25 plans", []).append([(plan_shape(p), 0.0) for p in side.plans])
        for name, retriever in (("vector top 4", vector), ("hybrid top 4", hybrid)):
            result = await retriever.search(question, scope, 4)
            found[name].append([(c.chunk.text, round(c.similarity, 4)) for c in result.chunks])
    return found


async def shape_of(side: Built) -> dict[str, object]:
    async with side.index.sessionmaker() as session:
        rows = (await session.execute(_ROWS_DIGEST)).one()
        shape = (await session.execute(_SHAPE)).one()
        librarian = await session.scalar(_LIBRARIAN)
    store = side.index.store
    assert isinstance(store, ChromaVectorStore), "compares Chroma's collections"
    # Chroma's own count of the library owner's collection (the store counts all or a document).
    library = store._owner_collection(librarian, create=False)
    return {
        "chunk rows": rows.chunks,
        "the library's vectors": library.count() if library is not None else 0,
        "chunk rows' digest": rows.digest,
        **dict(shape._mapping),
    }


async def main(library: int, elsewhere: int, per_document: int, queries: int) -> None:
    embedder = LocalMiniLMEmbedder()
    asked = questions(queries)
    async with (
        built(embedder, WORKER, library, elsewhere, per_document) as worker,
        built(embedder, WORKER, library, elsewhere, per_document) as again,
        built(embedder, BULK, library, elsewhere, per_document) as bulk,
    ):
        sides = (worker, again, bulk)
        shapes = [await shape_of(side) for side in sides]
        found = [await answers(embedder, side, asked) for side in sides]
    rows: list[list[object]] = [
        [
            name,
            *(shape[name] for shape in shapes),
            *(shapes[0][name] == s[name] for s in shapes[1:]),
        ]
        for name in shapes[0]
    ]
    for name in found[0]:
        same = [
            sum(a == b for a, b in zip(found[0][name], other[name], strict=True))
            for other in found[1:]
        ]
        rows.append([name, f"{queries} questions", "", "", *(f"{n} of {queries}" for n in same)])
    rows.append(["build seconds", *(f"{side.seconds:.0f}" for side in sides), "", ""])
    print(
        f"{library:,} chunks in scope, {elsewhere:,} elsewhere, {per_document} a document; "
        f"{queries} SQuAD questions"
    )
    headers = ["check", "worker", "worker again", "bulk", "same: again", "same: bulk"]
    print(table(headers, rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--library", type=int, default=5000)
    parser.add_argument("--elsewhere", type=int, default=5000)
    parser.add_argument("--chunks-per-document", type=int, default=1)
    parser.add_argument("--queries", type=int, default=50)
    arguments = parser.parse_args()
    asyncio.run(
        main(
            arguments.library, arguments.elsewhere, arguments.chunks_per_document, arguments.queries
        )
    )
