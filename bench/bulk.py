"""Bench libraries written in bulk: the rows the worker would write, without the worker's path.

The worker writes a chunk's lexical row with one prepared `INSERT` a row and its vector with a
Chroma call a batch; a bench library of 200,000 chunks written that way (`write_chunks`) takes
21 minutes and more on a busy machine. Here the same rows go in by PostgreSQL's `COPY` into
a temporary table and one `INSERT ... SELECT` that makes each row's `tsvector` as the worker's
statement does (same text, word count, language and text search configuration); the chunks'
languages are told in side processes (and kept, by text, for later builds), and the vectors
(the same seeded random unit vectors `write_chunks` draws, in the same order) go into the
vector store meanwhile, for the owners whose chunks a figure searches. What a search reads is
the same: the same rows, the same GIN index filled through its pending list and merged by
`VACUUM`, the same vectors under the same ids (`bench.check_bulk_build` compares the two).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.retrieval.index import BlockingVectorStore, Chunk
from docchat.retrieval.languages import CONFIGURATIONS, configuration_of, language_code
from docchat.retrieval.lexical import as_indexed, word_count
from docchat.retrieval.models import INDEX_VERSION

# Rows a batch: the vectors' (as `write_chunks` wrote them, so the random stream is the same),
# and the language detection's, one task of a side process.
VECTOR_BATCH = 2000
VECTOR_SLICE = 250
LANGUAGE_BATCH = 10_000
LANGUAGE_PROCESSES = 2
# The languages told of the benches' texts, by text digest (the texts are drawn the same way in
# every run, so a later build tells none).
LANGUAGES_CACHE = Path(tempfile.gettempdir()) / "docchat-bench-languages"

_STAGING = """
CREATE TEMPORARY TABLE bench_chunks (
  document_id uuid, chunk_index integer, text text, indexed text, tokens integer,
  language text
) ON COMMIT DROP
"""
# A configuration's language code (the worker stores the code it told; a `simple` row, Chinese,
# Japanese or Korean, is left untold here: the benches' texts are English).
_CODE = (
    "CASE language "
    + " ".join(f"WHEN '{name}' THEN '{code}'" for code, name in CONFIGURATIONS.items())
    + " END"
)
# The worker's `_UPSERT_CHUNK`, for every staged row at once (a new library: no conflicts; no
# Chinese text, so no English gloss to add).
_FROM_STAGING = f"""
INSERT INTO document_chunks
  (document_id, chunk_index, page, location, text, tokens, tsv, language, language_code,
   index_version)
SELECT document_id, chunk_index, NULL, NULL, text, tokens,
       docchat_folded(to_tsvector(CAST(language AS regconfig), coalesce(indexed, text))),
       language, {_CODE}, {INDEX_VERSION}
FROM bench_chunks
"""  # noqa: S608


@dataclass(frozen=True)
class LexicalRow:
    """What the worker's statement writes besides the chunk's address: `indexed` is None when
    BM25 reads the text as it is (no Chinese or Japanese to split into pairs)."""

    tokens: int
    language: str
    indexed: str | None


def lexical_row(content: str, language: str) -> LexicalRow:
    """A text's row, as `lexical.add_chunks` makes it, its language already told."""
    indexed = as_indexed(content, language_code(language))
    return LexicalRow(word_count(content), language, None if indexed == content else indexed)


def configurations_of(texts: Sequence[str], default: str) -> list[str]:
    """Each text's text search configuration (run in a side process: about a millisecond a
    text, and several on a busy machine)."""
    return [configuration_of(content, default) for content in texts]


def _digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:24]


def _cached_languages(default: str) -> tuple[Path, dict[str, str]]:
    path = LANGUAGES_CACHE / f"{default}.json"
    known: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    return path, known


async def languages(texts: Sequence[str], default: str) -> list[str]:
    """Each text's configuration: told in side processes for texts never told before, then
    kept in `LANGUAGES_CACHE`, so that the other shapes of a library (the same texts, cut into
    other documents) and later runs read them."""
    path, known = _cached_languages(default)
    keys = [_digest(content) for content in texts]
    new = list(
        {key: content for key, content in zip(keys, texts, strict=True) if key not in known}.items()
    )
    if new:
        loop = asyncio.get_running_loop()
        # Spawned, not forked: this process has Chroma's and the model's threads running.
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=LANGUAGE_PROCESSES, mp_context=spawn) as side:
            parts = [
                loop.run_in_executor(
                    side,
                    configurations_of,
                    [content for _, content in new[start : start + LANGUAGE_BATCH]],
                    default,
                )
                for start in range(0, len(new), LANGUAGE_BATCH)
            ]
            told = [language for part in await asyncio.gather(*parts) for language in part]
        known.update(zip((key for key, _ in new), told, strict=True))
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_suffix(f".{os.getpid()}.tmp")
        written.write_text(json.dumps(known))
        written.replace(path)
    return [known[key] for key in keys]


def unit_vectors(rng: np.random.Generator, count: int, dimension: int) -> Iterator[np.ndarray]:
    """`count` random unit vectors in batches of `VECTOR_BATCH`, drawn as `write_chunks` draws
    them (one batch at a time from the same generator, so the same vectors in the same order)."""
    for start in range(0, count, VECTOR_BATCH):
        vectors = rng.normal(size=(min(VECTOR_BATCH, count - start), dimension))
        vectors = vectors.astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        yield vectors


def write_vectors(
    store: BlockingVectorStore,
    chunks: Sequence[Chunk],
    rng: np.random.Generator,
    dimension: int,
    owners: frozenset[uuid.UUID] | None = None,
) -> None:
    """Every chunk's vector, drawn as `write_chunks` draws them; written for the chunks of
    `owners` only, when given (the others' vectors are drawn all the same, so that each chunk
    keeps the vector the worker's path gives it)."""
    batches = unit_vectors(rng, len(chunks), dimension)
    for start, vectors in zip(range(0, len(chunks), VECTOR_BATCH), batches, strict=True):
        batch = chunks[start : start + VECTOR_BATCH]
        kept = [i for i, c in enumerate(batch) if owners is None or c.owner_id in owners]
        # In slices: Chroma holds the interpreter for a whole write, and the event loop, which
        # sends PostgreSQL its rows meanwhile, needs it between them.
        for at in range(0, len(kept), VECTOR_SLICE):
            part = kept[at : at + VECTOR_SLICE]
            store.upsert([batch[i] for i in part], vectors[part].tolist())


async def copy_lexical_rows(
    sessionmaker: async_sessionmaker[AsyncSession],
    chunks: Sequence[Chunk],
    rows: Sequence[LexicalRow],
) -> None:
    """The chunks' rows of the lexical index: `COPY` into a temporary table, then one
    statement making their `tsvector`s."""
    records = [
        (c.document_id, c.chunk_index, c.text, r.indexed, r.tokens, r.language)
        for c, r in zip(chunks, rows, strict=True)
    ]
    engine = sessionmaker.kw["bind"]
    async with engine.connect() as connection:
        raw = await connection.get_raw_connection()
        driver: Any = raw.driver_connection
        # asyncpg's own transaction: the staging table lives until it commits.
        async with driver.transaction():
            await driver.execute(_STAGING)
            await driver.copy_records_to_table(
                "bench_chunks",
                records=records,
                columns=["document_id", "chunk_index", "text", "indexed", "tokens", "language"],
            )
            await driver.execute(_FROM_STAGING)


async def write_chunks_in_bulk(
    store: BlockingVectorStore,
    sessionmaker: async_sessionmaker[AsyncSession],
    chunks: Sequence[Chunk],
    rng: np.random.Generator,
    dimension: int = 384,
    language: str = "english",
    vector_owners: frozenset[uuid.UUID] | None = None,
) -> None:
    """What `common.write_chunks` writes for these chunks, batch after batch, written at once:
    the vectors in a thread while the languages are told and PostgreSQL makes the rows. With
    `vector_owners`, only their chunks get vectors (see `write_vectors`)."""
    vectors = asyncio.ensure_future(
        asyncio.to_thread(write_vectors, store, chunks, rng, dimension, vector_owners)
    )
    try:
        told = await languages([chunk.text for chunk in chunks], language)
        rows = [
            lexical_row(c.text, told_language)
            for c, told_language in zip(chunks, told, strict=True)
        ]
        await copy_lexical_rows(sessionmaker, chunks, rows)
    finally:
        await vectors  # not left writing into a store its caller may remove


def chunk_addresses(
    owned: Sequence[tuple[uuid.UUID, uuid.UUID]], chunks_per_document: int
) -> Iterator[tuple[uuid.UUID, uuid.UUID, int]]:
    """(owner, document, chunk index) of every chunk, in the order `bench_wide_scope.fill`
    writes them."""
    for owner, document in owned:
        for index in range(chunks_per_document):
            yield owner, document, index
