from __future__ import annotations

import uuid

from docchat.retrieval.context import build_context, format_context
from docchat.retrieval.vectorstore import Chunk, ScoredChunk


def hit(text: str, page: int | None = 1, index: int = 0) -> ScoredChunk:
    chunk = Chunk(uuid.uuid4(), index, text, page, uuid.uuid4(), "private", "f.pdf")
    return ScoredChunk(chunk, 0.9)


def test_chunks_are_numbered_and_kept_within_budget() -> None:
    hits = [hit("a" * 400, index=i) for i in range(5)]
    entries = build_context(hits, budget_tokens=250)  # 1000 characters
    assert [entry.number for entry in entries] == [1, 2]
    assert entries[0].source.content_preview == "a" * 200


def test_the_best_chunk_is_cut_rather_than_dropped() -> None:
    entries = build_context([hit("b" * 5000)], budget_tokens=300)
    assert len(entries) == 1 and len(entries[0].text) == 1200


def test_format_numbers_the_passages() -> None:
    text = format_context(build_context([hit("Text.", page=3), hit("More.", page=None)], 1000))
    assert text == "[1] Text.\n\n[2] More."
