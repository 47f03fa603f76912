"""How a BM25 ranking and a vector ranking become one ranking.

Two methods, chosen by `RAG_FUSION`:
- `convex` (the default): each side's scores normalised to [0, 1] over the candidates, then
  added with the weights. Cosine similarities are min-max normalised; BM25 scores are divided by
  the best one (a BM25 score is 0 where no term matches, so 0 is its true minimum). A candidate
  one side did not propose gets that side's lowest value. Unlike rank fusion, it keeps how far
  apart the candidates are: a passage with a BM25 score far above the rest is not pulled level
  with the vector side's tenth guess. Measured in the README ("Retrieval quality").
- `rrf`: reciprocal rank fusion, weight / (k + rank) summed over the rankings; scores unused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from docchat.config import FusionSettings

FusionMethod = Literal["convex", "rrf"]


@dataclass(frozen=True)
class Fusion:
    """How the BM25 ranking joins the vectors': `candidates` from each, then one ranking."""

    method: FusionMethod = "convex"
    candidates: int = 20
    rrf_k: int = 60
    vector_weight: float = 1.0
    lexical_weight: float = 1.0

    @classmethod
    def from_settings(cls, fusion: FusionSettings) -> Fusion:
        return cls(
            method=fusion.fusion,
            candidates=fusion.candidates,
            rrf_k=fusion.rrf_k,
            vector_weight=fusion.vector_weight,
            lexical_weight=fusion.lexical_weight,
        )

    def fuse(
        self,
        vector_ranked: Sequence[tuple[str, float]],
        lexical_ranked: Sequence[tuple[str, float]],
        similarity_of_others: Mapping[str, float],
    ) -> list[str]:
        """Candidate ids, best first.

        `vector_ranked` and `lexical_ranked` are each side's (id, score) candidates, best first;
        `similarity_of_others` the cosine similarity of lexical candidates the vector side did
        not propose (convex fusion scores them with it).
        """
        if self.method == "rrf":
            return reciprocal_rank_fusion(
                [[key for key, _ in vector_ranked], [key for key, _ in lexical_ranked]],
                [self.vector_weight, self.lexical_weight],
                self.rrf_k,
            )
        similarity = {**dict(vector_ranked), **similarity_of_others}
        return convex_fusion(
            similarity, dict(lexical_ranked), self.vector_weight, self.lexical_weight
        )


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int
) -> list[str]:
    """Ids ordered by the sum over rankings of weight / (k + rank), rank counted from 1."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda key: -scores[key])


def _min_max(scores: Mapping[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high <= low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def _over_best(scores: Mapping[str, float]) -> dict[str, float]:
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(scores, 0.0)
    return {key: max(0.0, value) / best for key, value in scores.items()}


def convex_fusion(
    similarity: Mapping[str, float],
    bm25: Mapping[str, float],
    vector_weight: float,
    lexical_weight: float,
) -> list[str]:
    """Ids ordered by vector_weight * normalised similarity + lexical_weight * normalised BM25.

    Ties keep the order in which the ids first appear (vector side first)."""
    vector = _min_max(similarity)
    lexical = _over_best(bm25)
    keys = list(dict.fromkeys([*similarity, *bm25]))
    combined = {
        key: vector_weight * vector.get(key, 0.0) + lexical_weight * lexical.get(key, 0.0)
        for key in keys
    }
    return sorted(keys, key=lambda key: -combined[key])
