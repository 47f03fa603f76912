"""Extractive answers: the passages' own best sentences, quoted with their `[n]`, no model call.

The built-in demo model (135M parameters) often ignores the passages it is given or cites
nothing; a wrong answer or one without sources loses a reader's trust in the whole product.
Quoting the sentences (or table rows) that best match the question is always grounded, always
cited, and takes a few milliseconds. `answer` picks, over the passages an answer was given:
- each passage's best span (its `Highlight` for the question), scored by the weight of the
  question's words it holds, a little less for a passage ranked lower by retrieval;
- the best one, and the next best while it scores at least `SECOND_QUOTE_SHARE` of it, up to
  `MAX_QUOTES`, each from a different passage;
and quotes them in the order of their passages, a table row as "column: value" pairs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from docchat.retrieval.citations import strip_markers
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.highlight import TABLE_RULE, Highlight, Match, best_match, weights_for

INTRODUCTION = "From the documents:"
MAX_QUOTES = 2
# A second passage is quoted when its best span scores at least this share of the best one's.
SECOND_QUOTE_SHARE = 0.6
# Each rank below the first discounts a passage's score by this much (retrieval's order is
# evidence too: its first passage holds the answer four times in five on SQuAD).
RANK_DISCOUNT = 0.1
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Quote:
    entry: ContextEntry
    highlight: Highlight
    score: float


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def _header_before(passage: str, position: int) -> list[str] | None:
    """The header cells of the Markdown table whose row starts at `position`."""
    lines = passage[:position].rstrip("\n").split("\n")
    for index in range(len(lines) - 1, 0, -1):
        if TABLE_RULE.match(lines[index]):
            return _cells(lines[index - 1])
    return None


def quoted_text(entry: ContextEntry, highlight: Highlight) -> str:
    """The span as a reader should see it: a table row as "column: value" pairs, a span cut
    out of a longer sentence with an ellipsis where it was cut."""
    passage = entry.text
    if highlight.row is not None:
        header = _header_before(passage, highlight.start)
        values = _cells(highlight.text)
        if header and len(header) == len(values):
            pairs = [f"{name}: {value}" for name, value in zip(header, values, strict=True)]
            return "; ".join(pair for pair in pairs if not pair.endswith(": "))
        return " | ".join(value for value in values if value)
    text = " ".join(highlight.text.split())
    if highlight.start > 0 and not _starts_unit(passage, highlight.start):
        text = "…" + text
    if highlight.end < len(passage) and text[-1] not in ".!?:;\"'”’)":
        text += "…"
    return text


def _starts_unit(passage: str, start: int) -> bool:
    before = passage[:start].rstrip()
    return not before or before[-1] in ".!?:;\n\"'”’)" or passage[start - 1] == "\n"


def choose(question: str, entries: Sequence[ContextEntry]) -> list[Quote]:
    """The spans to quote, in the order of their passages."""
    readable = [entry for entry in entries if entry.text.strip()]
    weights = weights_for((entry.text, entry.source.location) for entry in readable)
    found: list[Quote] = []
    for rank, entry in enumerate(readable):
        match: Match | None = best_match(
            entry.text, question, location=entry.source.location, weights=weights
        )
        if match is not None:
            found.append(Quote(entry, match.highlight, match.score / (1 + RANK_DISCOUNT * rank)))
    if not found:
        return []
    ranked = sorted(found, key=lambda quote: quote.score, reverse=True)
    best = ranked[0]
    chosen = [best]
    seen = {best.highlight.text}
    for quote in ranked[1:]:
        if len(chosen) == MAX_QUOTES or quote.score < SECOND_QUOTE_SHARE * best.score:
            break
        if quote.score > 0 and quote.highlight.text not in seen:
            chosen.append(quote)
            seen.add(quote.highlight.text)
    return sorted(chosen, key=lambda quote: quote.entry.number)


def compose(quotes: Sequence[Quote]) -> str:
    """The answer: a short introduction, then each quote as a block with its marker."""
    blocks = [
        f"> {quoted_text(quote.entry, quote.highlight)} [{quote.entry.number}]" for quote in quotes
    ]
    return "\n\n".join([INTRODUCTION, *blocks])


def answer(question: str, entries: Sequence[ContextEntry]) -> tuple[str, list[Quote]] | None:
    """The extractive answer and what it quotes; None when no passage has text to quote."""
    quotes = choose(question, entries)
    if not quotes:
        return None
    return compose(quotes), quotes


_QUOTE_LINE = re.compile(r"^> ?", re.MULTILINE)


def for_history(answer: str) -> str:
    """An earlier answer as the model reads it in a later turn: without its [n] markers (they
    numbered that turn's passages, not this one's), and a quoted answer as the sentences it
    quoted. Shown "From the documents:" and quotation marks, the built-in model wrote its general
    answers in that form too, quoting nothing."""
    if answer.startswith(INTRODUCTION):
        quotes = _QUOTE_LINE.sub("", answer.removeprefix(INTRODUCTION)).split("\n\n")
        answer = " ".join(quote.strip() for quote in quotes if quote.strip())
    return strip_markers(answer)
