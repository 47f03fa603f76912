"""How a BM25 ranking and a vector ranking become one ranking.

Three methods, chosen by `RAG_FUSION`:
- `convex`: each side's scores normalised to [0, 1] over the candidates, then added with the
  weights. Cosine similarities are min-max normalised; BM25 scores are divided by the best one
  (a BM25 score is 0 where no term matches, so 0 is its true minimum). A candidate BM25 did not
  propose counts 0 there; one the vectors did not propose has its own similarity. Unlike rank
  fusion, it keeps how far apart the candidates are: a passage with a BM25 score far above the
  rest is not pulled level with the vector side's tenth guess.
- `adaptive` (the default): `convex`, with two changes that need no setting. Each side's weight
  follows how decisive it is for this question: the square root of how far its candidates'
  normalised scores stay, on average, below its best (a side whose candidates all score alike
  cannot tell them apart, and a side whose best stands out can). And BM25 is read deeper than
  the candidates it proposes (`LEXICAL_LOOKUP` times), so a vector candidate BM25 ranked just
  past its proposals keeps its BM25 score instead of 0. On many short, similar documents (the
  parts of 685 licence texts) BM25's best candidates often all score alike, and the vector
  side's answer, absent from them, counted 0 there. Measured in docs/retrieval-quality.md.
- `rrf`: reciprocal rank fusion, weight / (k + rank) summed over the rankings; scores unused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from docchat.config import FusionSettings

FusionMethod = Literal["adaptive", "convex", "rrf"]
# `adaptive` reads BM25 this many times as deep as the candidates it proposes; the deeper ones
# only lend their scores to the vector side's candidates.
LEXICAL_LOOKUP = 2.5


@dataclass(frozen=True)
class Fusion:
    """How the BM25 ranking joins the vectors': `candidates` from each, then one ranking."""

    method: FusionMethod = "adaptive"
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

    def lexical_depth(self, depth: int) -> int:
        """How many BM25 results to read when each side proposes `depth` candidates."""
        return math.ceil(depth * LEXICAL_LOOKUP) if self.method == "adaptive" else depth

    def fuse(
        self,
        vector_ranked: Sequence[tuple[str, float]],
        lexical_ranked: Sequence[tuple[str, float]],
        similarity_of_others: Mapping[str, float],
        lexical_beyond: Mapping[str, float] | None = None,
    ) -> list[str]:
        """Candidate ids, best first.

        `vector_ranked` and `lexical_ranked` are each side's (id, score) candidates, best first;
        `similarity_of_others` the cosine similarity of lexical candidates the vector side did
        not propose (convex fusion scores them with it); `lexical_beyond` the BM25 scores of the
        results read past BM25's candidates (`lexical_depth`), which `adaptive` gives to the
        vector candidates among them.
        """
        if self.method == "rrf":
            return reciprocal_rank_fusion(
                [[key for key, _ in vector_ranked], [key for key, _ in lexical_ranked]],
                [self.vector_weight, self.lexical_weight],
                self.rrf_k,
            )
        similarity = {**dict(vector_ranked), **similarity_of_others}
        if self.method == "convex":
            return convex_fusion(
                similarity, dict(lexical_ranked), self.vector_weight, self.lexical_weight
            )
        return adaptive_fusion(
            similarity,
            dict(lexical_ranked),
            self.vector_weight,
            self.lexical_weight,
            lexical_beyond or {},
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


def decisiveness(normalised: Sequence[float]) -> float:
    """How well a side tells its candidates apart, from their scores normalised to [0, 1]
    (the best at 1): the square root of how far they stay below the best on average. 0 when
    all score alike (or there are none), near 1 when the best stands alone."""
    if not normalised:
        return 0.0
    return math.sqrt(max(0.0, 1.0 - sum(normalised) / len(normalised)))


def adaptive_fusion(
    similarity: Mapping[str, float],
    bm25: Mapping[str, float],
    vector_weight: float,
    lexical_weight: float,
    bm25_beyond: Mapping[str, float],
) -> list[str]:
    """Ids ordered as `convex_fusion` orders them, with each side's weight multiplied by its
    `decisiveness` for this question, and the BM25 score of a candidate only the vectors
    proposed taken from `bm25_beyond` where BM25 ranked it further down (still divided by the
    best of `bm25`). Equal weights when neither side tells its candidates apart.

    Ties keep the order in which the ids first appear (vector side first)."""
    vector = _min_max(similarity)
    lexical = _over_best(bm25)
    best = max(bm25.values(), default=0.0)
    keys = list(dict.fromkeys([*similarity, *bm25]))
    if best > 0:
        for key in keys:
            if key not in lexical and key in bm25_beyond:
                lexical[key] = min(1.0, max(0.0, bm25_beyond[key]) / best)
    vector_decides = vector_weight * decisiveness(list(vector.values()))
    lexical_decides = lexical_weight * decisiveness([lexical[key] for key in bm25])
    if vector_decides + lexical_decides <= 0:
        vector_decides, lexical_decides = vector_weight, lexical_weight
    combined = {
        key: vector_decides * vector.get(key, 0.0) + lexical_decides * lexical.get(key, 0.0)
        for key in keys
    }
    return sorted(keys, key=lambda key: -combined[key])
