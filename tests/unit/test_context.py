from __future__ import annotations

import uuid

from docchat.retrieval.context import TokenBudget, build_context, format_context
from docchat.retrieval.index import Chunk, ScoredChunk
from docchat.retrieval.passage_identity import HEADER_CHARS


def hit(text: str, page: int | None = 1, index: int = 0) -> ScoredChunk:
    chunk = Chunk(uuid.uuid4(), index, text, page, uuid.uuid4(), "private", "f.pdf")
    return ScoredChunk(chunk, 0.9)


def test_chunks_are_numbered_and_kept_within_budget_with_room_for_their_headers() -> None:
    hits = [hit("a" * 400, index=i) for i in range(5)]
    # 1,300 characters: two passages of 400 and their headers' 120 each, not a third.
    entries = build_context(hits, TokenBudget(325))
    assert [entry.number for entry in entries] == [1, 2]
    assert entries[0].source.content_preview == "a" * 200


def test_the_best_chunk_is_cut_rather_than_dropped() -> None:
    entries = build_context([hit("b" * 5000)], TokenBudget(300))
    assert len(entries) == 1 and len(entries[0].text) == 1200 - HEADER_CHARS


def test_format_puts_each_passage_after_its_header_line() -> None:
    hits = [hit("Text.", page=3), hit("More.", page=None)]
    text = format_context(build_context(hits, TokenBudget(1000)))
    assert text == '[1] "f.pdf", page 3\nText.\n\n[2] "f.pdf"\nMore.'
