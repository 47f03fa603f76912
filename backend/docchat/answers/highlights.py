"""Which sentence of each passage an answer shows highlighted.

Before the answer: the sentence that best matches what was asked (`matched_text`); once it is
written: the one the answer used (`answer_highlights`); for a quoted answer: exactly what was
quoted (`quoted_highlights`).
"""

from __future__ import annotations

import dataclasses

from docchat.answers import extractive
from docchat.answers.meta import AnswerMeta
from docchat.retrieval.citations import strip_markers
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.highlight import highlight, weights_for
from docchat.retrieval.schemas import Source


def matched_text(asked: str, meta: AnswerMeta) -> str:
    """What a passage's sentences are matched against for highlights and quotes: the question,
    and its translation when it was searched translated (a German question's words are not
    those of the English sentence that answers it)."""
    if meta.translated_query:
        return f"{asked}\n{meta.translated_query}"
    return asked


def quoted_highlights(
    entries: list[ContextEntry], quotes: list[extractive.Quote]
) -> list[ContextEntry]:
    """The entries with each quoted source's highlight set to exactly what was quoted."""
    quoted = {quote.entry.number: quote.highlight for quote in quotes}
    return [
        dataclasses.replace(
            entry,
            source=entry.source.model_copy(update={"highlight": quoted[entry.number]}),
        )
        if entry.number in quoted
        else entry
        for entry in entries
    ]


def answer_highlights(
    entries: list[ContextEntry], sources: list[Source], question: str, answer: str
) -> list[Source]:
    """The cited sources with their highlights chosen again, the answer known."""
    texts = {entry.source.chunk_id: entry for entry in entries}
    weights = weights_for((entry.text, entry.source.location) for entry in entries)
    said = strip_markers(answer)
    updated: list[Source] = []
    for source in sources:
        entry = texts.get(source.chunk_id)
        if entry is None or not entry.text.strip():
            updated.append(source)
            continue
        span = highlight(entry.text, question, said, location=source.location, weights=weights)
        updated.append(source.model_copy(update={"highlight": span}))
    return updated
