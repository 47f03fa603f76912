"""Fit numbered context into a token budget, offline (no tokenizer download).

Tokens are estimated at four characters each, which over-counts for English and keeps
other scripts on the safe side of the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from docchat.retrieval.schemas import PREVIEW_CHARS, Source
from docchat.retrieval.vectorstore import ScoredChunk

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass(frozen=True)
class ContextEntry:
    number: int
    text: str
    source: Source


def source_of(hit: ScoredChunk) -> Source:
    chunk = hit.chunk
    return Source(
        document_id=chunk.document_id,
        document_name=chunk.filename,
        chunk_id=chunk.id,
        page=chunk.page,
        similarity=round(hit.similarity, 4),
        content_preview=chunk.text[:PREVIEW_CHARS],
    )


def build_context(hits: list[ScoredChunk], budget_tokens: int) -> list[ContextEntry]:
    """Number the chunks in rank order and keep what fits in `budget_tokens`.

    The best chunk is cut to fit rather than dropped; later ones that do not fit are left out.
    """
    entries: list[ContextEntry] = []
    remaining = budget_tokens * CHARS_PER_TOKEN
    for hit in hits:
        text = hit.chunk.text
        if len(text) > remaining:
            if entries or remaining < 200:
                break
            text = text[:remaining]
        entries.append(ContextEntry(number=len(entries) + 1, text=text, source=source_of(hit)))
        remaining -= len(text)
    return entries


def format_context(entries: list[ContextEntry]) -> str:
    """`[n] text` blocks. File names and pages stay out: small models copy them into answers."""
    return "\n\n".join(f"[{entry.number}] {entry.text}" for entry in entries)
