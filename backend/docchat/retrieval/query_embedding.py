"""Query embedding with dynamic batching: questions that arrive together share one model call.

On a CPU the fixed cost of a model call dominates for a one-sentence query (MiniLM on two
cores: 7 ms for one query, 15 ms for eight), so under load embedding the waiting queries as
one batch multiplies how many questions per second the service can take. Nothing waits on
purpose: a query that finds the model idle is embedded at once; the ones that arrive while
a call runs go together in the next call.

A query can also be embedded ahead of its search (`anticipate_query`): the message flow starts
embedding a question's words when the message arrives, so the model runs while the turn is
saved and the scope read, and the search finds the vector ready. Others that compare the same
question (a long chat choosing its earlier exchanges) share that vector (`shared_query`): the
question is embedded once, whichever asks first.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from docchat.llm.embeddings import Embedder, query_vectors

MAX_BATCH = 16
# Embeddings made ahead of a search that never came (a user with no documents, a failed turn)
# are forgotten beyond this many, oldest first.
MAX_ANTICIPATED = 64


# How often `shared` makes the vector again when the search it shared one with was stopped.
SHARED_ATTEMPTS = 3


class EmbeddingCancelled(Exception):
    """Every embedding of a query that a comparison waited for was cancelled by its search."""


def _observe_failure(future: asyncio.Future[list[float]]) -> None:
    """An anticipated embedding may fail with nobody waiting: its search reports the failure
    when it asks again, so it is not logged as "never retrieved" here."""
    if not future.cancelled():
        future.exception()


@dataclass
class QueryBatcher:
    embedder: Embedder
    max_batch: int = MAX_BATCH
    max_anticipated: int = MAX_ANTICIPATED
    _pending: list[tuple[str, asyncio.Future[list[float]]]] = field(default_factory=list)
    _drainer: asyncio.Task[None] | None = None
    _anticipated: OrderedDict[str, asyncio.Future[list[float]]] = field(default_factory=OrderedDict)
    # The latest queries embedded, searched or not, for `shared`.
    _recent: OrderedDict[str, asyncio.Future[list[float]]] = field(default_factory=OrderedDict)

    async def embed(self, text: str) -> list[float]:
        """The vector of `text`: one embedded ahead for it if there is one (used once), else
        embedded now, in the next batch."""
        future = self._anticipated.pop(text, None)
        if not _usable(future):
            future = self._submit(text)  # none, or the model failed then: it may not now
        assert future is not None
        return await future

    async def shared(self, text: str) -> list[float]:
        """The vector of `text` for a comparison beside its search: the one its search made or
        is making if there is one, else embedded now and kept for the search to find."""
        for _ in range(SHARED_ATTEMPTS):
            future = self._recent.get(text)
            if not _usable(future):
                self.anticipate(text)
                future = self._anticipated[text]
            assert future is not None
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if not future.cancelled():
                    raise  # this caller is being cancelled
                # The search it belonged to was stopped, taking its embedding along: make one.
        raise EmbeddingCancelled(f"the embedding of a query was cancelled {SHARED_ATTEMPTS} times")

    def anticipate(self, text: str) -> None:
        """Start embedding `text` now for a search expected shortly (`embed` picks it up)."""
        if _usable(self._anticipated.get(text)):
            return
        future = self._submit(text)
        future.add_done_callback(_observe_failure)
        self._anticipated[text] = future
        while len(self._anticipated) > self.max_anticipated:
            self._anticipated.popitem(last=False)

    def _submit(self, text: str) -> asyncio.Future[list[float]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[float]] = loop.create_future()
        self._pending.append((text, future))
        self._recent[text] = future
        self._recent.move_to_end(text)
        while len(self._recent) > self.max_anticipated:
            self._recent.popitem(last=False)
        if self._drainer is None or self._drainer.done() or self._drainer.get_loop() is not loop:
            # Waiters of a loop that is gone (a finished test, say) can never be answered.
            self._pending = [item for item in self._pending if item[1].get_loop() is loop]
            self._anticipated = OrderedDict(
                (key, item) for key, item in self._anticipated.items() if item.get_loop() is loop
            )
            self._recent = OrderedDict(
                (key, item) for key, item in self._recent.items() if item.get_loop() is loop
            )
            self._drainer = loop.create_task(self._drain())
        return future

    async def _drain(self) -> None:
        while self._pending:
            batch = [item for item in self._pending[: self.max_batch] if not item[1].done()]
            del self._pending[: self.max_batch]
            if not batch:
                continue
            try:
                texts = [text for text, _ in batch]
                vectors = await asyncio.to_thread(query_vectors, self.embedder, texts)
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector)


def _usable(future: asyncio.Future[list[float]] | None) -> bool:
    """Whether a query's embedding, made or under way, can still be awaited here: of this event
    loop, not cancelled, not failed."""
    return (
        future is not None
        and future.get_loop() is asyncio.get_running_loop()
        and not future.cancelled()
        and not (future.done() and future.exception() is not None)
    )


_batchers: weakref.WeakKeyDictionary[Embedder, QueryBatcher] = weakref.WeakKeyDictionary()


def _batcher(embedder: Embedder) -> QueryBatcher:
    batcher = _batchers.get(embedder)
    if batcher is None:
        batcher = _batchers[embedder] = QueryBatcher(embedder)
    return batcher


async def embed_query(embedder: Embedder, text: str) -> list[float]:
    """The embedding of one query, batched with the others waiting for the same model."""
    return await _batcher(embedder).embed(text)


async def shared_query(embedder: Embedder, text: str) -> list[float]:
    """The vector of a query, made once for its search and any comparison (see `shared`)."""
    return await _batcher(embedder).shared(text)


def anticipate_query(embedder: Embedder, text: str) -> None:
    """Start embedding a query whose search is about to come (must run inside the event loop)."""
    _batcher(embedder).anticipate(text)
