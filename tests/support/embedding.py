"""An embedder for tests: the real model, with a record of what it was asked."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docchat.llm.embeddings import Embedder

# The local model's ONNX graphs, made by the first process of a run that needs them and loaded
# by every other (the servers tests start inherit the variable): not exported again in each.
MODEL_CACHE = Path(
    os.environ.setdefault(
        "EMBEDDING_MODEL_CACHE_DIR", str(Path(__file__).parents[2] / ".cache" / "models")
    )
)


@dataclass(eq=False)  # hashable by identity: the query batchers are kept per embedder
class CountingEmbedder:
    """The real model, recording every call's texts; `fail_next` makes the next call fail."""

    model: Embedder
    texts: list[list[str]] = field(default_factory=list)
    fail_next: bool = False

    @property
    def calls(self) -> list[int]:
        return [len(texts) for texts in self.texts]

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.append(list(texts))
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("model crashed")
        return self.model.embed(texts)
