"""Dynamic batching of query embeddings, around the real MiniLM model."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from docchat.llm.embeddings import Embedder
from docchat.retrieval.query_embedding import QueryBatcher


@dataclass
class CountingEmbedder:
    """The real model, recording the size of every call made to it."""

    model: Embedder
    calls: list[int] = field(default_factory=list)
    fail_next: bool = False

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("model crashed")
        return self.model.embed(texts)


QUESTIONS = [f"When does ferry number {i} leave the harbour?" for i in range(24)]


async def test_concurrent_queries_share_model_calls_and_get_their_own_vectors(
    embedder: Embedder,
) -> None:
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting, max_batch=8)
    assert len(await batcher.embed("a lone question")) == embedder.dimension
    assert counting.calls == [1]  # nobody else waiting: embedded at once, alone
    counting.calls.clear()
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
