"""The reranker port (`Reranker`, registered in `RERANKERS`): what every implementation
promises, run over each one (the HTTP one against a rerank server on loopback)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.config import RerankSettings
from docchat.retrieval.index import Chunk, ScoredChunk
from docchat.retrieval.retriever import RERANKERS, Reranker
from tests.support.rerank_server import RerankServer

Maker = Callable[[RerankServer], Reranker | None]


def _settings(**values: object) -> RerankSettings:
    return RerankSettings(_env_file=None, **values)  # type: ignore[call-arg]


MAKERS: dict[str, Maker] = {
    "http": lambda server: RERANKERS.get("http")(_settings(kind="http", url=server.url)),
}


def test_every_registered_reranker_is_tested() -> None:
    assert sorted(MAKERS) == RERANKERS.names()


@pytest.fixture(scope="module")
def server() -> AsyncIterator[RerankServer]:
    running = RerankServer().start()
    yield running  # type: ignore[misc]
    running.stop()


@pytest.fixture(params=sorted(MAKERS))
async def reranker(request: pytest.FixtureRequest, server: RerankServer) -> AsyncIterator[Reranker]:
    server.reset()
    server.favoured = ["ferry"]
    made = MAKERS[request.param](server)
    assert made is not None
    yield made
    await made.close()


def hit(text: str, similarity: float) -> ScoredChunk:
    document, owner = uuid.uuid4(), uuid.uuid4()
    return ScoredChunk(Chunk(document, 0, text, 1, owner, "private", "a.md"), similarity)


async def test_the_best_passage_comes_first_and_nothing_is_lost(reranker: Reranker) -> None:
    candidates = [hit("Income tax rules.", 0.9), hit("The ferry leaves at nine.", 0.5)]
    ranked = await reranker.rerank("When does the ferry leave?", candidates, top_k=2)
    assert ranked[0].chunk.text == "The ferry leaves at nine."
    assert sorted(h.chunk.id for h in ranked) == sorted(h.chunk.id for h in candidates)
    assert [h.similarity for h in ranked] == [0.5, 0.9], "the similarity is left as it was"


async def test_fewer_than_two_candidates_come_back_as_they_are(reranker: Reranker) -> None:
    only = [hit("The ferry leaves at nine.", 0.5)]
    assert await reranker.rerank("ferry?", only, top_k=4) == only
    assert await reranker.rerank("ferry?", [], top_k=4) == []


def test_without_its_settings_a_reranker_is_off() -> None:
    for name in RERANKERS.names():
        if name == "http":
            assert RERANKERS.get(name)(_settings(kind=name)) is None
