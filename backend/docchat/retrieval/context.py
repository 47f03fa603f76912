"""Numbered context within one token budget, estimated offline (no tokenizer download).

Tokens are estimated at four characters each, which over-counts for English and keeps other
scripts on the safe side of the window. A `TokenBudget` is the one place that decides what
fits: searched passages, passages the model's tool calls found, text read inline, and whole
documents all spend from the budget their answer was given, each passage with room for the
header line it reaches the model after (`passage_identity`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from docchat.kit.tokens import CHARS_PER_TOKEN
from docchat.retrieval.highlight import highlight, preview_of, weights_for
from docchat.retrieval.index import ScoredChunk
from docchat.retrieval.passage_identity import HEADER_CHARS, DocumentIdentity, passage_block
from docchat.retrieval.schemas import Source

# Room for the instructions and formatting around the passages.
PROMPT_OVERHEAD_TOKENS = 200
# The best passage is cut to fit rather than dropped, unless less than this much room is left.
MIN_CUT_CHARS = 200


class TokenBudget:
    """Tokens of context an answer may still spend (counted in characters, four a token)."""

    def __init__(self, tokens: int) -> None:
        self.tokens = max(0, tokens)
        self.spent_chars = 0

    @classmethod
    def for_prompt(
        cls, *, window: int, answer_tokens: int, prompt_tokens: int, cap: int
    ) -> TokenBudget:
        """What a context window leaves for passages once the answer, the rest of the prompt
        and the instructions have their room, never more than `cap`."""
        room = window - answer_tokens - prompt_tokens - PROMPT_OVERHEAD_TOKENS
        return cls(min(cap, room))

    @property
    def remaining_chars(self) -> int:
        return max(0, self.tokens * CHARS_PER_TOKEN - self.spent_chars)

    @property
    def remaining_tokens(self) -> int:
        return self.remaining_chars // CHARS_PER_TOKEN

    def spend(self, text: str) -> None:
        self.spent_chars += len(text)

    def take(self, text: str, *, header: int = 0) -> bool:
        """Spend `text` (and `header` more characters: a passage's header line) if it fits;
        False (nothing spent) if it does not."""
        if len(text) + header > self.remaining_chars:
            return False
        self.spent_chars += len(text) + header
        return True

    def cut(self, text: str, *, header: int = 0) -> str:
        """As much of `text` as fits beside `header` characters, spent."""
        self.spent_chars += min(header, self.remaining_chars)
        piece = text[: self.remaining_chars]
        self.spend(piece)
        return piece


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
        location=chunk.location,
        similarity=round(hit.similarity, 4),
        content_preview=preview_of(chunk.text),
    )


def build_context(hits: list[ScoredChunk], budget: TokenBudget) -> list[ContextEntry]:
    """Number the chunks in rank order and keep what fits in `budget`, each with room for
    its header line (`passage_identity`).

    The best chunk is cut to fit rather than dropped; later ones that do not fit are left out.
    """
    entries: list[ContextEntry] = []
    for hit in hits:
        text = hit.chunk.text
        if not budget.take(text, header=HEADER_CHARS):
            if entries or budget.remaining_chars < MIN_CUT_CHARS + HEADER_CHARS:
                break
            text = budget.cut(text, header=HEADER_CHARS)
        entries.append(ContextEntry(number=len(entries) + 1, text=text, source=source_of(hit)))
    return entries


def with_highlights(entries: list[ContextEntry], question: str) -> list[ContextEntry]:
    """The entries with each source's highlight: the span of its passage that best matches the
    question, words weighed by their rarity over all the entries' passages."""
    weights = weights_for((entry.text, entry.source.location) for entry in entries)
    return [
        dataclasses.replace(
            entry,
            source=entry.source.model_copy(
                update={
                    "highlight": highlight(
                        entry.text, question, location=entry.source.location, weights=weights
                    )
                }
            ),
        )
        for entry in entries
    ]


def format_context(
    entries: list[ContextEntry], identities: Mapping[uuid.UUID, DocumentIdentity] | None = None
) -> str:
    """The passages as the model reads them, each its header line (`[n]`, its document's
    name, place, dates and collections: `passage_identity`) and then its text. The header is
    plainly a header, apart from the text: small models copied file names written into the
    passages into their answers."""
    known = identities or {}
    return "\n\n".join(
        passage_block(entry.number, entry.text, entry.source, known.get(entry.source.document_id))
        for entry in entries
    )


def dated(
    entries: list[ContextEntry], identities: Mapping[uuid.UUID, DocumentIdentity]
) -> list[ContextEntry]:
    """The entries with each source's `document_date`: its document's own date, else the day
    its content was uploaded (what tells which of two disagreeing sources is newer)."""
    stamped = []
    for entry in entries:
        identity = identities.get(entry.source.document_id)
        day = identity and (identity.document_date or identity.uploaded)
        if day:
            entry = dataclasses.replace(
                entry, source=entry.source.model_copy(update={"document_date": day})
            )
        stamped.append(entry)
    return stamped


def documents_of(entries: Iterable[ContextEntry]) -> list[uuid.UUID]:
    """The documents of `entries`' passages, each once, for `DocumentIdentities`."""
    return list(dict.fromkeys(entry.source.document_id for entry in entries))
