"""Convex fusion of normalised scores, its adaptive weights, and rank fusion."""

from __future__ import annotations

import pytest

from docchat.retrieval.fusion import Fusion, adaptive_fusion, convex_fusion, decisiveness


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


@pytest.mark.parametrize("method", ["adaptive", "convex", "rrf"])
def test_every_candidate_of_either_side_is_kept_once(method: str) -> None:
    vector = [("a", 0.5), ("b", 0.4)]
    lexical = [("b", 3.0), ("c", 1.0)]
    fused = Fusion(method=method).fuse(vector, lexical, {"c": 0.2})  # type: ignore[arg-type]
    assert sorted(fused) == ["a", "b", "c"]


def test_the_default_is_adaptive_and_reads_bm25_deeper() -> None:
    assert Fusion().method == "adaptive"
    assert Fusion().lexical_depth(20) == 50
    assert Fusion(method="convex").lexical_depth(20) == 20
    assert Fusion(method="rrf").lexical_depth(20) == 20


def test_decisiveness_is_how_far_the_candidates_stay_below_the_best() -> None:
    assert decisiveness([]) == 0.0
    assert decisiveness([1.0, 1.0, 1.0]) == 0.0  # all alike: cannot tell them apart
    assert decisiveness([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.75**0.5)
    assert decisiveness([1.0, 0.9, 0.9]) < decisiveness([1.0, 0.5, 0.2])


def test_a_side_whose_candidates_all_score_alike_gives_way_to_a_decisive_one() -> None:
    # BM25's candidates score alike (the question's words are in every part of a licence);
    # the vectors single out v. Equal fixed weights let BM25's narrow favourite b win.
    similarity = {"v": 0.80, "b": 0.77, "c": 0.50, "d": 0.40, "e": 0.30}
    bm25 = {"b": 10.0, "v": 9.0, "c": 9.5, "d": 9.6, "e": 9.4}
    assert convex_fusion(similarity, bm25, 1, 1)[0] == "b"
    assert adaptive_fusion(similarity, bm25, 1, 1, {})[0] == "v"
    # And the other way round: a decisive BM25 against vectors that score alike.
    flat = {"a": 0.71, "b": 0.70, "c": 0.70, "d": 0.69}
    sharp = {"c": 12.0, "a": 2.0, "b": 1.5, "d": 1.0}
    assert adaptive_fusion(flat, sharp, 1, 1, {})[0] == "c"


def test_a_vector_candidate_keeps_its_bm25_score_from_further_down() -> None:
    # u is the vectors' favourite; BM25 ranked it just past its candidates. Counted 0 there,
    # it falls behind w, which both sides find middling; with its BM25 score it stays first.
    similarity = {"u": 0.90, "w": 0.80, "x": 0.40, "y": 0.30}
    bm25 = {"w": 10.0, "x": 9.0, "y": 8.0}
    assert adaptive_fusion(similarity, bm25, 1, 1, {})[0] == "w"
    assert adaptive_fusion(similarity, bm25, 1, 1, {"u": 7.9})[0] == "u"
    # A score from further down never counts for more than the best candidate's.
    fused = Fusion().fuse(list(similarity.items()), list(bm25.items()), {}, {"u": 99.0})
    assert fused[0] == "u"


def test_adaptive_edge_cases_keep_every_candidate() -> None:
    assert adaptive_fusion({}, {}, 1, 1, {}) == []
    assert adaptive_fusion({"a": 0.4}, {}, 1, 1, {}) == ["a"]
    # Neither side tells its candidates apart: the configured weights, ties in first order.
    assert adaptive_fusion({"a": 0.4, "b": 0.4}, {"a": 1.0, "b": 1.0}, 1, 1, {}) == ["a", "b"]
    # BM25 found nothing that scores: the vectors' order.
    assert adaptive_fusion({"a": 0.2, "b": 0.9}, {"a": 0.0}, 1, 1, {}) == ["b", "a"]
    # The configured weights still apply: BM25 off.
    assert adaptive_fusion({"a": 0.9, "b": 0.3}, {"b": 5.0}, 1, 0, {}) == ["a", "b"]


@pytest.mark.parametrize("method", ["adaptive", "convex", "rrf"])
def test_scores_from_further_down_add_no_candidate(method: str) -> None:
    vector = [("a", 0.5), ("b", 0.4)]
    lexical = [("b", 3.0), ("c", 1.0)]
    fused = Fusion(method=method).fuse(vector, lexical, {"c": 0.2}, {"z": 0.5, "a": 0.9})  # type: ignore[arg-type]
    assert sorted(fused) == ["a", "b", "c"]
