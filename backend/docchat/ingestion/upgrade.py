"""Documents stored by earlier versions of docchat, brought up to date for today's searches.

The first release kept every chunk, text included, in one Chroma collection and wrote no BM25
rows (`document_chunks` came with migration 0003, a collection per owner later). After
`docchat migrate` its documents are listed as completed, and nothing finds them: no search
looks in the single collection, and BM25 has no row of theirs. So every process that runs
the worker (`docchat serve`, `docchat worker`) calls `bring_up_to_date` when it starts, beside
its lanes, and `docchat reindex --layout-only` runs it at once. It:

1. moves the chunks of the single collection to their owners' collections, vectors and text
   kept (nothing is embedded again);
2. writes the BM25 rows of every completed document that has none, from the text the vector
   store kept with its chunks: the passages its vectors were made from, so both indexes hold
   the same ones;
3. queues a document to be read again from its file (as `docchat reindex` does) when the
   store does not hold the text of every one of its chunks;
4. writes again the BM25 vectors of the rows an earlier version of the index wrote otherwise
   (German chunks indexed before their compounds' parts were: migration 0034), from their text.

Each step may be cut short and run again: a batch of chunks is written to its owner's
collection before it leaves the old one; a document's rows are written in one transaction
with its row locked, after checking it still has none; documents are gone through in id
order, and one with rows is never listed again. Progress goes to the log; `backlog` tells
what is left (`docchat doctor`, `docchat migrate`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings
from docchat.db import session_scope, utcnow
from docchat.documents import jobs_repository
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, DocumentStatus
from docchat.extraction.chunking import indexed_text
from docchat.retrieval import lexical
from docchat.retrieval.index import (
    BlockingVectorStore,
    Chunk,
    OlderLayout,
    ThreadedIndex,
    VectorIndex,
)
from docchat.retrieval.passage_glosses import PassageGlosses

logger = logging.getLogger(__name__)

# The command that does it all at once (the service does it when it starts).
COMMAND = "docchat reindex --layout-only"
# Documents read per round, and chunks asked of the vector store at a time.
DOCUMENTS_PER_ROUND = 50
CHUNKS_PER_READ = 1000
# Rows of an earlier version of the index written again in one transaction.
ROWS_PER_ROUND = 500


class UpgradeParts(Protocol):
    """What bringing documents up to date uses (`Components` has these among its parts)."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    vector_store: BlockingVectorStore
    vector_index: VectorIndex
    glosses: PassageGlosses


@dataclass(frozen=True)
class Backlog:
    """What earlier versions left that searches cannot find yet."""

    documents_without_rows: int
    chunks_in_older_layout: int
    # Found, but less well than now: German rows without their compounds' parts, rows in
    # other languages without their English gloss (written again at start).
    outdated_rows: int = 0

    def __bool__(self) -> bool:
        return bool(self.documents_without_rows or self.chunks_in_older_layout)

    def describe(self) -> str:
        parts = []
        if self.documents_without_rows:
            parts.append(f"{self.documents_without_rows} completed document(s) have no BM25 rows")
        if self.chunks_in_older_layout:
            parts.append(
                f"{self.chunks_in_older_layout} chunk(s) wait in the single vector collection "
                "of an earlier version"
            )
        return " and ".join(parts)


@dataclass
class Outcome:
    moved: int = 0  # chunks moved out of the older layout
    rebuilt: int = 0  # documents given their BM25 rows
    requeued: int = 0  # documents queued to be read again
    reindexed: int = 0  # rows of an earlier version of the index written again
    finished: bool = True  # False when told to stop before the end


async def older_layout_chunks(store: BlockingVectorStore) -> int:
    if not isinstance(store, OlderLayout):
        return 0
    return await asyncio.to_thread(store.legacy_chunk_count)


async def backlog(
    sessionmaker: async_sessionmaker[AsyncSession], store: BlockingVectorStore | None
) -> Backlog:
    """What is left to do (the vector store's part only when it is given)."""
    async with sessionmaker() as session:
        without_rows = await documents_repository.count_without_lexical_rows(session)
        outdated = await lexical.count_outdated(session)
    older = 0 if store is None else await older_layout_chunks(store)
    return Backlog(without_rows, older, outdated)


async def bring_up_to_date(parts: UpgradeParts, stop: asyncio.Event | None = None) -> Outcome:
    """Move the older layout's chunks, then write the missing BM25 rows (or queue the
    document again); stop between batches once `stop` is set."""
    stop = stop or asyncio.Event()
    outcome = Outcome()
    outcome.moved = await _move_older_layout(parts.vector_store, stop)
    if not stop.is_set():
        await _write_missing_rows(parts, outcome, stop)
    if not stop.is_set():
        outcome.reindexed = await _rewrite_outdated_rows(parts, stop)
    outcome.finished = not stop.is_set()
    return outcome


async def run_at_start(parts: UpgradeParts, stop: asyncio.Event) -> None:
    """`bring_up_to_date` for a starting service: whatever fails is logged with what to do,
    and the service goes on (the next start resumes)."""
    try:
        outcome = await bring_up_to_date(parts, stop)
    except Exception:
        logger.exception(
            "documents of an earlier version could not all be brought up to date; the next "
            "start resumes, or run `%s`",
            COMMAND,
        )
        return
    if outcome.moved or outcome.rebuilt or outcome.requeued or outcome.reindexed:
        logger.warning(
            "documents of an earlier version %s: %d chunks moved to the current layout, "
            "BM25 rows written for %d documents, %d queued to be read again, %d rows "
            "indexed again",
            "brought up to date" if outcome.finished else "partly brought up to date (stopped)",
            outcome.moved,
            outcome.rebuilt,
            outcome.requeued,
            outcome.reindexed,
        )


async def _move_older_layout(store: BlockingVectorStore, stop: asyncio.Event) -> int:
    if not isinstance(store, OlderLayout):
        return 0
    waiting = await asyncio.to_thread(store.legacy_chunk_count)
    if not waiting:
        return 0
    logger.warning(
        "%d chunks of an earlier version wait in the single vector collection: moving them "
        "to their owners' collections",
        waiting,
    )

    def progress(moved: int, left: int) -> bool:
        logger.info("older vector layout: %d chunks moved, %d left", moved, left)
        return not stop.is_set()

    return await asyncio.to_thread(store.move_legacy_chunks, progress)


async def _write_missing_rows(parts: UpgradeParts, outcome: Outcome, stop: asyncio.Event) -> None:
    async with parts.sessionmaker() as session:
        total = await documents_repository.count_without_lexical_rows(session)
    if not total:
        return
    logger.warning(
        "%d completed documents have no BM25 rows: writing them from the text the vector "
        "store kept",
        total,
    )
    after: uuid.UUID | None = None
    while not stop.is_set():
        async with parts.sessionmaker() as session:
            documents = await documents_repository.without_lexical_rows(
                session, after, DOCUMENTS_PER_ROUND
            )
        if not documents:
            return
        for document in documents:
            chunks = await _stored_chunks(parts.vector_index, document)
            if chunks is None:
                outcome.requeued += await _queue_again(parts.sessionmaker, document.id)
            else:
                outcome.rebuilt += await _write_rows(parts, document, chunks)
        after = documents[-1].id
        logger.info(
            "BM25 rows of earlier documents: %d of %d written, %d queued to be read again",
            outcome.rebuilt,
            total,
            outcome.requeued,
        )


async def _stored_chunks(index: VectorIndex, document: Document) -> list[Chunk] | None:
    """Every chunk of the document's answering version with its text, as the vector store
    kept it, in reading order; None when the store lacks any of them (or its text)."""
    count = document.chunk_count or 0
    found: dict[int, Chunk] = {}
    for start in range(0, count, CHUNKS_PER_READ):
        wanted = [
            Chunk(document.id, i, "", None, document.owner_id, "", "", version=document.version)
            for i in range(start, min(count, start + CHUNKS_PER_READ))
        ]
        for chunk in await index.read(wanted):
            if chunk.text and chunk.version == document.version:
                found[chunk.chunk_index] = chunk
    if len(found) != count:
        return None
    return [
        replace(found[i], visibility=document.visibility, filename=document.filename)
        for i in range(count)
    ]


def _indexed(settings: Settings) -> Callable[[str, str], str]:
    """What BM25 sees of a chunk of a file (filename, text), as the worker writes it."""
    header = settings.indexing.chunk_header
    return lambda filename, text: indexed_text(filename, text, header=header)


async def _write_rows(parts: UpgradeParts, document: Document, chunks: list[Chunk]) -> int:
    """The document's BM25 rows and word total, unless it changed meanwhile (read again,
    deleted, or given its rows by another process): 1 when written."""
    indexed = _indexed(parts.settings)
    await parts.glosses.ready_for([chunk.text for chunk in chunks])
    async with session_scope(parts.sessionmaker) as session:
        current = await documents_repository.lock_live(session, document.id)
        if not _unchanged(current, document) or await lexical.count_chunks(session, document.id):
            return 0
        await lexical.add_chunks(
            session,
            chunks,
            parts.settings.indexing.lexical_language,
            [indexed(c.filename, c.text) for c in chunks],
            parts.glosses,
        )
        await documents_repository.refresh_token_count(session, document.id)
    return 1


async def _rewrite_outdated_rows(parts: UpgradeParts, stop: asyncio.Event) -> int:
    async with parts.sessionmaker() as session:
        total = await lexical.count_outdated(session)
    if not total:
        return 0
    logger.warning(
        "%d BM25 rows were written by an earlier version of the index (German chunks without "
        "their compounds' parts, those in other languages without their English gloss): "
        "writing them again from their text",
        total,
    )
    indexed = _indexed(parts.settings)
    await parts.glosses.ready()  # the rows are those of glossed languages
    done = 0
    while not stop.is_set():
        async with session_scope(parts.sessionmaker) as session:
            written = await lexical.rewrite_outdated(
                session,
                indexed,
                parts.settings.indexing.lexical_language,
                ROWS_PER_ROUND,
                parts.glosses,
            )
        if not written:
            break
        done += written
        logger.info("BM25 rows of an earlier index version: %d of %d written again", done, total)
    return done


async def _queue_again(
    sessionmaker: async_sessionmaker[AsyncSession], document_id: uuid.UUID
) -> int:
    """Queue the document to be read again from its file (its vectors and rows are then
    written anew): 1 when queued."""
    async with session_scope(sessionmaker) as session:
        document = await documents_repository.lock_live(session, document_id)
        if document is None or document.status != DocumentStatus.completed:
            return 0
        if await lexical.count_chunks(session, document_id):
            return 0
        if await documents_repository.version_in_progress(session, document_id) is not None:
            return 0  # the new version, once read, brings its own rows
        await jobs_repository.cancel_pending(session, document_id, utcnow())
        document.chunks_done = 0
        await jobs_repository.enqueue(session, document)
    logger.warning(
        "document %s: the vector store does not hold its chunks' text; queued to be read "
        "again from its file",
        document_id,
    )
    return 1


def _unchanged(current: Document | None, listed: Document) -> bool:
    return (
        current is not None
        and current.status == DocumentStatus.completed
        and (current.version, current.chunk_count) == (listed.version, listed.chunk_count)
    )


@dataclass
class Parts:
    """`UpgradeParts` for a command that has no `Components` (`docchat reindex`)."""

    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    vector_store: BlockingVectorStore
    vector_index: VectorIndex
    glosses: PassageGlosses

    @classmethod
    def of(
        cls,
        settings: Settings,
        sessionmaker: async_sessionmaker[AsyncSession],
        store: BlockingVectorStore,
        glosses: PassageGlosses,
    ) -> Parts:
        return cls(settings, sessionmaker, store, ThreadedIndex(store), glosses)
