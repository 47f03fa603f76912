"""Dynamic batching of query embeddings, and embeddings made ahead of their search, around the
real MiniLM model."""

from __future__ import annotations

import asyncio
import math

import pytest

from docchat.llm.embeddings import Embedder
from docchat.retrieval.query_embedding import QueryBatcher
from tests.support.embedding import CountingEmbedder

QUESTIONS = [f"When does ferry number {i} leave the harbour?" for i in range(24)]


async def test_concurrent_queries_share_model_calls_and_get_their_own_vectors(
    embedder: Embedder,
) -> None:
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting, max_batch=8)
    assert len(await batcher.embed("a lone question")) == embedder.dimension
    assert counting.calls == [1]  # nobody else waiting: embedded at once, alone
    counting.texts.clear()
    vectors = await asyncio.gather(*(batcher.embed(question) for question in QUESTIONS))
    assert counting.calls == [8, 8, 8]
    for question, vector in zip(QUESTIONS, vectors, strict=True):
        alone = embedder.embed([question])[0]
        assert math.isclose(
            sum(a * b for a, b in zip(vector, alone, strict=True)), 1.0, abs_tol=1e-4
        )


async def test_a_failed_call_fails_its_batch_and_the_next_query_works(
    embedder: Embedder,
) -> None:
    counting = CountingEmbedder(embedder, fail_next=True)
    batcher = QueryBatcher(counting)
    results = await asyncio.gather(
        *(batcher.embed(question) for question in QUESTIONS[:3]), return_exceptions=True
    )
    assert all(isinstance(result, RuntimeError) for result in results)
    assert len(await batcher.embed("one more question")) == embedder.dimension
    assert counting.calls == [3, 1]


async def test_a_cancelled_waiter_does_not_disturb_the_others(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting)
    first = asyncio.create_task(batcher.embed(QUESTIONS[0]))
    doomed = asyncio.create_task(batcher.embed(QUESTIONS[1]))
    kept = asyncio.create_task(batcher.embed(QUESTIONS[2]))
    await asyncio.sleep(0)
    doomed.cancel()
    assert len(await first) == len(await kept) == embedder.dimension
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert sum(counting.calls) == 2  # the cancelled query was never embedded


async def _settled(batcher: QueryBatcher) -> None:
    """Until every embedding started ahead has its vector or its error."""
    for _ in range(400):
        if all(future.done() for future in batcher._anticipated.values()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the embeddings ahead never finished")


async def test_a_query_embedded_ahead_is_what_its_search_gets(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting)
    batcher.anticipate(QUESTIONS[0])
    batcher.anticipate(QUESTIONS[0])  # asked twice (a retried request): embedded once
    await _settled(batcher)  # the model runs while the caller does other work
    assert counting.texts == [[QUESTIONS[0]]]
    vector = await batcher.embed(QUESTIONS[0])
    assert counting.texts == [[QUESTIONS[0]]]  # the search used it, no second call
    assert vector == embedder.embed([QUESTIONS[0]])[0]
    await batcher.embed(QUESTIONS[0])  # used once: the next search of the words embeds anew
    assert counting.calls == [1, 1]


async def test_a_failed_embedding_ahead_is_tried_again_by_its_search(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder, fail_next=True)
    batcher = QueryBatcher(counting)
    batcher.anticipate(QUESTIONS[0])
    await _settled(batcher)
    assert len(await batcher.embed(QUESTIONS[0])) == embedder.dimension
    assert counting.calls == [1, 1]


async def test_embeddings_ahead_whose_search_never_came_are_forgotten(embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting, max_anticipated=2)
    for question in QUESTIONS[:3]:
        batcher.anticipate(question)
    await _settled(batcher)
    assert sum(counting.calls) == 3
    await batcher.embed(QUESTIONS[0])  # the oldest was forgotten: embedded again
    await batcher.embed(QUESTIONS[2])  # still kept: no call
    assert sum(counting.calls) == 4


async def test_a_comparison_keeps_its_vector_when_the_search_it_shared_one_with_is_stopped(
    embedder: Embedder,
) -> None:
    """Another request's search embedding the same words is stopped while a long chat's
    history compares its question with that embedding: the comparison gets a vector of its own
    (it got the search's CancelledError, which failed its whole turn)."""
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting)
    busy = asyncio.create_task(batcher.embed(QUESTIONS[0]))  # the model is busy with this one
    await asyncio.sleep(0)
    stopped = asyncio.create_task(batcher.embed(QUESTIONS[1]))
    await asyncio.sleep(0)
    compared = asyncio.create_task(batcher.shared(QUESTIONS[1]))
    await asyncio.sleep(0)
    stopped.cancel()
    vector = await compared
    await busy
    alone = embedder.embed([QUESTIONS[1]])[0]
    assert math.isclose(sum(a * b for a, b in zip(vector, alone, strict=True)), 1.0, abs_tol=1e-4)
    with pytest.raises(asyncio.CancelledError):
        await stopped
