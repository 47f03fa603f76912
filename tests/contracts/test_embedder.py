"""The embedder port (`Embedder`, registered in `EMBEDDERS`): what every implementation
promises, run over each one (the OpenAI one against an OpenAI-protocol server on loopback that
answers with the real local model's vectors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.config import EmbeddingSettings
from docchat.llm.embeddings import EMBEDDERS, Embedder
from tests.support.llm_server import ScriptedLLM

Maker = Callable[[ScriptedLLM], Embedder]


def _settings(**values: object) -> EmbeddingSettings:
    return EmbeddingSettings(_env_file=None, **values)  # type: ignore[call-arg]


MAKERS: dict[str, Maker] = {
    "local": lambda _: EMBEDDERS.get("local")(_settings(backend="local", batch_size=2)),
    "openai": lambda server: EMBEDDERS.get("openai")(
        _settings(backend="openai", base_url=server.base_url, model="minilm", batch_size=2)
    ),
}


def test_every_registered_embedder_is_tested() -> None:
    assert sorted(MAKERS) == EMBEDDERS.names()


@pytest.fixture(params=sorted(MAKERS))
def embedder(
    request: pytest.FixtureRequest, scripted_llm: ScriptedLLM, embedder: Embedder
) -> Iterator[Embedder]:
    scripted_llm.embed_with = embedder  # the session's real local model
    try:
        yield MAKERS[request.param](scripted_llm)
    finally:
        scripted_llm.embed_with = None


def test_vectors_have_the_dimension_and_unit_length(embedder: Embedder) -> None:
    vectors = embedder.embed(["The ferry leaves at nine.", "Le bac part à neuf heures.", "x"])
    assert len(vectors) == 3 and embedder.dimension > 0 and embedder.name
    for vector in vectors:
        assert len(vector) == embedder.dimension
        assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-3)


def test_order_and_batches_do_not_change_a_vector(embedder: Embedder) -> None:
    texts = ["first passage", "second passage", "third passage"]
    together = embedder.embed(texts)
    alone = [embedder.embed([text])[0] for text in reversed(texts)][::-1]
    for a, b in zip(together, alone, strict=True):
        assert a == pytest.approx(b, abs=1e-4)


def test_similar_texts_are_closer_than_unrelated_ones(embedder: Embedder) -> None:
    ferry, boat, tax = embedder.embed(
        ["The ferry leaves the harbour at nine.", "The boat departs port at 9.", "Income tax."]
    )

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(ferry, boat) > cosine(ferry, tax)


def test_nothing_to_embed_is_no_call(embedder: Embedder) -> None:
    assert embedder.embed([]) == []
