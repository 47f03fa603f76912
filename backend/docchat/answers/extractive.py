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

A quote must be about what the question names: when the question holds distinguishing names
(`names_in`: "Does Acme insure the Glimmerdal drones?"), only passages that mention all of them,
in their text, their document's name or their location, are quoted, else those that mention one
(and the verdict says which name is missing); when none does, the answer says that the documents
found do not answer it (`NOT_ANSWERED`) rather than quote a sentence about another deck's drones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docchat.answers import conflicts
from docchat.answers.evidence import (
    IDENTIFIER,
    Gloss,
    Needs,
    Verdict,
    gives_asked,
    names_mentioned,
    no_gloss,
    read_with,
    verdict,
)
from docchat.retrieval.citations import strip_markers
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.highlight import (
    TABLE_RULE,
    Highlight,
    Match,
    Weights,
    best_match,
    is_caption,
    terms,
    weights_for,
)
from docchat.retrieval.languages import language_of

INTRODUCTION = "From the documents:"
# Before the nearest passages of a question the documents do not cover (the built-in model).
NEAREST_INTRODUCTION = (
    "Your documents do not seem to cover this. The nearest passages, which may not answer it:"
)
# Before quotes that answer only part of the question, or that do not answer it (`evidence`).
PARTIAL_INTRODUCTION = "The documents answer this only in part ({why}):"
NOT_COVERED_INTRODUCTION = (
    "Your documents do not answer this ({why}). The closest passages, but not an answer:"
)
# What an answer says when the passages found are about something else than the question names.
NOT_ANSWERED = "The documents found do not answer this: none of their passages mentions {names}."
MAX_QUOTES = 2
# A second passage is quoted when its best span scores at least this share of the best one's.
SECOND_QUOTE_SHARE = 0.6
# Each rank below the first discounts a passage's score by this much (retrieval's order is
# evidence too: its first passage holds the answer four times in five on SQuAD).
RANK_DISCOUNT = 0.1
# For a question asking a figure or a date, a sentence that gives one is quoted before a better
# match that does not, while it scores at least this share of it ("Indexes can have up to 32
# columns" before "An index can be defined on more than one column" for "How many columns can
# a multicolumn index have at most?").
GIVING_SHARE = 0.5
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Quote:
    entry: ContextEntry
    highlight: Highlight
    score: float


@dataclass(frozen=True)
class Extracted:
    """An extractive answer: its text, what it quotes, what those quotes support, and the
    documents that disagree on what was asked (quoted on each side)."""

    text: str
    quotes: list[Quote]
    verdict: Verdict
    disagreement: conflicts.Disagreement | None = None


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def _head_before(passage: str, position: int) -> tuple[list[str] | None, str]:
    """The header cells of the Markdown table whose row starts at `position`, and its caption:
    the title line right above the header, as `highlight` reads one (else "")."""
    lines = passage[:position].rstrip("\n").split("\n")
    for index in range(len(lines) - 1, 0, -1):
        if TABLE_RULE.match(lines[index]):
            above = lines[index - 2].strip() if index >= 2 else ""
            caption = above if is_caption(above) else ""
            return _cells(lines[index - 1]), caption
    return None, ""


def quoted_text(entry: ContextEntry, highlight: Highlight) -> str:
    """The span as a reader should see it: a table row as "column: value" pairs, a span cut
    out of a longer sentence with an ellipsis where it was cut."""
    passage = entry.text
    if highlight.row is not None:
        header, caption = _head_before(passage, highlight.start)
        values = _cells(highlight.text)
        if header and len(header) == len(values):
            pairs = [f"{name}: {value}" for name, value in zip(header, values, strict=True)]
            row = "; ".join(pair for pair in pairs if not pair.endswith(": "))
        else:
            row = " | ".join(value for value in values if value)
        # The caption says what the table's figures are ("... Background Checks November -
        # 2015"): the row alone does not say its numbers count checks.
        return f"{caption} — {row}" if caption else row
    text = " ".join(highlight.text.split())
    if highlight.start > 0 and not _starts_unit(passage, highlight.start):
        text = "…" + text
    if highlight.end < len(passage) and text[-1] not in ".!?:;\"'”’)":
        text += "…"
    return text


def _starts_unit(passage: str, start: int) -> bool:
    before = passage[:start].rstrip()
    return not before or before[-1] in ".!?:;\n\"'”’)" or passage[start - 1] == "\n"


# A word that starts with a capital inside a sentence, or holds a digit or a second capital
# anywhere ("X200", "iPhone", "NATO"), is a name: what tells one deck's drones from another's.
# Capitals joined by "&" ("V&A", "AT&T") are one word.
_WORD = re.compile(r"[A-Z]\w*(?:&[A-Z]\w*)+|[^\W_][\w'’]*", re.UNICODE)
_SENTENCE_BREAK = re.compile(r"[.!?:;\n]")
# Capitalised without being names.
_NOT_NAMES = frozenset(("I",))
# German capitalises every noun: there, only a word with a digit or a second capital is a name.
_NOUNS_CAPITALISED = frozenset(("de",))


def _marked_as_name(word: str, *, by_case: bool) -> bool:
    """A word whose form alone says it is a name: a digit with letters, or (`by_case`) a
    second capital."""
    has_digit = any(char.isdigit() for char in word)
    has_letter = any(char.isalpha() for char in word)
    return (has_digit and has_letter) or (by_case and any(char.isupper() for char in word[1:]))


def names_in(question: str) -> list[str]:
    """The question's distinguishing names, as written, in order, each once: the words that
    start with a capital inside a sentence (in a language that capitalises only names), the
    words that hold a digit or a second capital ("X200", "iPhone", "NATO") and identifiers
    ("pg_trgm"). Such words written one after the other are one name ("Martin Luther King Jr").
    A question written in capitals alone has no names by case."""
    by_case = any(char.islower() for char in question)
    nouns_capitalised = not by_case or language_of(question) in _NOUNS_CAPITALISED
    found: list[str] = []
    phrase: list[str] = []
    previous_end: int | None = None

    def close_phrase() -> None:
        name = " ".join(phrase)
        if phrase and name not in found:
            found.append(name)
        phrase.clear()

    for match in _WORD.finditer(question):
        between = question[previous_end : match.start()] if previous_end is not None else ""
        starts_sentence = previous_end is None or bool(_SENTENCE_BREAK.search(between))
        previous_end = match.end()
        if between.strip():
            close_phrase()
        word = match.group().strip("'’")
        capitalised = bool(word) and word[0].isupper() and not starts_sentence
        is_name = (
            bool(word)
            and word not in _NOT_NAMES
            and (
                (capitalised and not nouns_capitalised)
                or _marked_as_name(word, by_case=by_case)
                or IDENTIFIER.search(word) is not None
            )
            and (bool(terms(word)) or "&" in word)
        )
        if is_name:
            phrase.append(word)
        else:
            close_phrase()
    close_phrase()
    return found


def mentions(
    entry: ContextEntry, names: Sequence[str], *, every: bool = False, gloss: Gloss = no_gloss
) -> bool:
    """Whether the passage (or its English `gloss`: "Warschau" names Warsaw), its document's
    name or its location mentions one of `names` (all of them with `every`), as
    `evidence.is_named` reads a name."""
    source = entry.source
    text = f"{read_with(gloss, entry.text)}\n{source.document_name}\n{source.location or ''}"
    if every:
        return all(names_mentioned(text, [name]) for name in names)
    return names_mentioned(text, names)


def _with_text(entries: Sequence[ContextEntry]) -> list[ContextEntry]:
    return [entry for entry in entries if entry.text.strip()]


def _weights(entries: Sequence[ContextEntry]) -> Weights:
    """How much each word tells, over all the passages given (not only those quoted from: over
    two passages that both hold the question's name, the name would tell nothing)."""
    return weights_for((entry.text, entry.source.location) for entry in _with_text(entries))


def about(
    entries: Sequence[ContextEntry], names: Sequence[str], gloss: Gloss = no_gloss
) -> list[ContextEntry]:
    """The passages with text that are about what the question names: those that mention all
    of `names` when some do, else those that mention one of them (all, with no names)."""
    readable = _with_text(entries)
    if not names:
        return readable
    every = [entry for entry in readable if mentions(entry, names, every=True, gloss=gloss)]
    return every or [entry for entry in readable if mentions(entry, names, gloss=gloss)]


def choose(
    question: str,
    entries: Sequence[ContextEntry],
    names: Sequence[str] = (),
    gloss: Gloss = no_gloss,
    gives: Callable[[str], bool] | None = None,
) -> list[Quote]:
    """The spans to quote, in the order of their passages: of the passages `about` what the
    question names (`names_in`), when it names something. With `gives` (what a sentence
    answering the question holds: `gives_asked`), such a sentence is preferred within
    `GIVING_SHARE` of the best match, in each passage and among them."""
    readable = about(entries, names, gloss)
    weights = _weights(entries)
    found: list[Quote] = []
    giving: set[int] = set()
    for rank, entry in enumerate(readable):
        match = _giving_match(entry, question, weights, gives)
        if match is None:
            continue
        if gives is not None and gives(match.whole):
            giving.add(entry.number)
        found.append(Quote(entry, match.highlight, match.score / (1 + RANK_DISCOUNT * rank)))
    if not found:
        return []
    top = max(quote.score for quote in found)

    def rank_of(quote: Quote) -> tuple[bool, float]:
        gives_it = quote.entry.number in giving and quote.score >= GIVING_SHARE * top
        return gives_it, quote.score

    ranked = sorted(found, key=rank_of, reverse=True)
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


def _giving_match(
    entry: ContextEntry, question: str, weights: Weights, gives: Callable[[str], bool] | None
) -> Match | None:
    """The passage's best match, or its best sentence that `gives` what is asked, where the
    best does not and that one scores within `GIVING_SHARE` of it."""
    location = entry.source.location
    match = best_match(entry.text, question, location=location, weights=weights)
    if match is None or gives is None or gives(match.whole):
        return match
    giving = best_match(entry.text, question, location=location, weights=weights, keep=gives)
    if giving is not None and giving.score >= GIVING_SHARE * match.score:
        return giving
    return match


def compose(
    quotes: Sequence[Quote],
    introduction: str = INTRODUCTION,
    disagreement: conflicts.Disagreement | None = None,
) -> str:
    """The answer: a short introduction, then each quote as a block with its marker, then
    (sources disagreeing) the sides."""
    blocks = [
        f"> {quoted_text(quote.entry, quote.highlight)} [{quote.entry.number}]" for quote in quotes
    ]
    ending = [conflicts.note(disagreement)] if disagreement is not None else []
    return "\n\n".join([introduction, *blocks, *ending])


def _listed(names: Sequence[str]) -> str:
    quoted = [f"“{name}”" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _with_sides(
    quotes: list[Quote], disagreement: conflicts.Disagreement, weights: Weights
) -> list[Quote]:
    """The quotes with each side of a disagreement among them (its sentence, from its
    passage), in the order of their passages."""
    quoted = {quote.entry.number for quote in quotes}
    for side in disagreement.sides:
        if side.entry.number in quoted:
            continue
        match = best_match(
            side.entry.text, side.span, location=side.entry.source.location, weights=weights
        )
        if match is not None:
            quotes.append(Quote(side.entry, match.highlight, match.score))
            quoted.add(side.entry.number)
    return sorted(quotes, key=lambda quote: quote.entry.number)


def _introduction(judged: Verdict, nearest: bool) -> str:
    if nearest:
        return NEAREST_INTRODUCTION
    if judged.evidence == "not_in_documents":
        return NOT_COVERED_INTRODUCTION.format(why=judged.why)
    if judged.evidence == "partial":
        return PARTIAL_INTRODUCTION.format(why=judged.why)
    return INTRODUCTION


def answer(
    question: str,
    entries: Sequence[ContextEntry],
    *,
    asked: str | None = None,
    nearest: bool = False,
    doubt: str | None = None,
    gloss: Gloss = no_gloss,
) -> Extracted | None:
    """The extractive answer and what it quotes; None when no passage has text to quote. No
    quotes: the question names something no passage mentions, and the text says so.

    `question` is what sentences are matched against (with its translation, when it was
    searched translated); `asked`, the question as the user wrote it, whose names and figures
    count (the question itself when not given). `nearest`: the passages are known not to answer
    (below the match floor), and are quoted as the nearest ones. `doubt`: why quotes that
    answer it by the engine's check are only a partial answer (a model said they do not).
    `gloss`: the English of passages in other languages, for the verdict."""
    asked = question if asked is None else asked
    names = names_in(asked)
    needs = Needs.of(asked, names)
    quotes = choose(question, entries, names, gloss, gives_asked(needs))
    if not quotes:
        if names and any(entry.text.strip() for entry in entries):
            why = f"none of their passages mentions {_listed(names)}"
            return Extracted(
                NOT_ANSWERED.format(names=_listed(names)), [], Verdict("not_in_documents", why)
            )
        return None
    weights = _weights(entries)
    disagreement = None
    if not nearest:
        # Over all the passages: a side may not repeat the name ("The default is 100
        # connections" under a manual's heading); `detect` wants the same asked thing.
        disagreement = conflicts.detect(
            question, needs, _with_text(entries), dated=conflicts.dated, weights=weights
        )
    if disagreement is not None:
        quotes = _with_sides(quotes, disagreement, weights)
    judged = verdict(
        needs,
        [quote.entry for quote in quotes],
        [quoted_text(quote.entry, quote.highlight) for quote in quotes],
        gloss=gloss,
    )
    if nearest:
        judged = Verdict("not_in_documents", judged.why)
    elif doubt is not None and judged.evidence == "answered":
        judged = Verdict("partial", doubt)
    text = compose(quotes, _introduction(judged, nearest), disagreement)
    return Extracted(text, quotes, judged, disagreement)


_QUOTE_LINE = re.compile(r"^> ?", re.MULTILINE)
_INTRODUCTIONS = re.compile(
    "|".join(
        re.escape(start).replace(re.escape("{why}"), r"[^\n]*?")
        for start in (
            INTRODUCTION,
            NEAREST_INTRODUCTION,
            PARTIAL_INTRODUCTION,
            NOT_COVERED_INTRODUCTION,
        )
    )
)


def for_history(answer: str) -> str:
    """An earlier answer as the model reads it in a later turn: without its [n] markers (they
    numbered that turn's passages, not this one's), and a quoted answer as the sentences it
    quoted. Shown "From the documents:" and quotation marks, the built-in model wrote its general
    answers in that form too, quoting nothing."""
    introduction = next(
        (match.group() for match in [_INTRODUCTIONS.match(answer)] if match is not None), None
    )
    if introduction is not None:
        quotes = _QUOTE_LINE.sub("", answer.removeprefix(introduction)).split("\n\n")
        answer = " ".join(quote.strip() for quote in quotes if quote.strip())
    return strip_markers(answer)
