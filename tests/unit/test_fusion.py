"""Convex fusion of normalised scores, and the choice between it and rank fusion."""

from __future__ import annotations

import pytest

from docchat.retrieval.fusion import Fusion, convex_fusion


def test_a_clear_bm25_winner_beats_the_vector_sides_narrow_favourite() -> None:
    # Vectors barely prefer a over b; BM25 puts b far ahead. Rank fusion calls it a tie and
    # keeps the vector side's order; convex fusion sees the distances.
    vector = [("a", 0.52), ("b", 0.51), ("c", 0.20)]
    lexical = [("b", 14.0), ("a", 2.0), ("d", 1.0)]
    others = {"d": 0.10}
    assert Fusion(method="convex").fuse(vector, lexical, others)[0] == "b"
    assert Fusion(method="rrf").fuse(vector, lexical, others)[:2] == ["a", "b"]


def test_scores_are_normalised_per_side() -> None:
    # Raw BM25 scores are ten times the cosine similarities; normalised, each side counts the
    # same: x is best on vectors, y on BM25, z second on both and best of the sum.
    similarity = {"x": 0.9, "y": 0.1, "z": 0.8}
    bm25 = {"x": 0.0, "y": 10.0, "z": 8.0}
    assert convex_fusion(similarity, bm25, 1, 1) == ["z", "x", "y"]


def test_weights_and_missing_sides() -> None:
    similarity = {"a": 0.9, "b": 0.3}
    bm25 = {"b": 5.0, "c": 4.0}  # c has no similarity: it gets the vector side's lowest, 0
    assert convex_fusion(similarity, bm25, 1, 0) == ["a", "b", "c"]
    assert convex_fusion(similarity, bm25, 0, 1) == ["b", "c", "a"]
    assert convex_fusion({}, {}, 1, 1) == []
    # One candidate, or all alike: nothing to normalise against, nothing lost.
    assert convex_fusion({"a": 0.4}, {}, 1, 1) == ["a"]
    assert convex_fusion({"a": 0.4, "b": 0.4}, {"a": 0.0}, 1, 1) == ["a", "b"]


@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_every_candidate_of_either_side_is_kept_once(method: str) -> None:
    vector = [("a", 0.5), ("b", 0.4)]
    lexical = [("b", 3.0), ("c", 1.0)]
    fused = Fusion(method=method).fuse(vector, lexical, {"c": 0.2})  # type: ignore[arg-type]
    assert sorted(fused) == ["a", "b", "c"]
