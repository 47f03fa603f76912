"""The part of a passage that shows what was cited: its best sentences or table rows.

A passage is up to a chunk (about 1,000 characters) long; a person checking an answer wants
the sentence that holds the fact. `highlight` cuts the passage into units (sentences of prose,
rows of a Markdown table) with their character offsets, scores each against the question (and
the answer, once there is one) and returns the best span of at most `HIGHLIGHT_CHARS`, with its
offsets in the passage and, for a table row, the row's number in its sheet or table.

Scoring is lexical and cheap (microseconds a passage), so every source of every answer gets
one, streamed or not:
- a word of the question counts by its rarity among the units of all the passages the answer
  was given (a name that occurs in one sentence weighs more than a word in all of them);
- words are stemmed (Snowball, English) and numbers kept whole, so "proofs" finds "proof";
  Chinese and Japanese are read as pairs of characters (`languages.segmented`);
- a unit that shares the answer's distinctive words wins over one that only shares the
  question's: the answer says which fact was used;
- of units that score alike, the one with the question's words in its order wins, then the one
  holding what the question asks for (a year, a number, a name);
- a Markdown heading line is a unit of its own that is never shown alone: when it scores best,
  the best sentence of its section is shown (the heading is the source's location already).
A unit much shorter than the budget takes the neighbour that scores best with it (never a
heading), so the highlight of "Who designed it?" keeps "It was designed in 1871." together with
the name in the sentence before.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import snowballstemmer
from pydantic import BaseModel, Field

from docchat.extraction.markup import FENCE, MARKDOWN_HEADING
from docchat.retrieval.languages import is_cjk, segmented

HIGHLIGHT_CHARS = 200

# A sentence ends at . ! ? (or their CJK forms), perhaps with closing quotes or brackets, before
# white space; or at a blank line; or before a line that starts a list item or a heading.
# (Chinese and Japanese put no space after a full stop.)
_SENTENCE_END = re.compile(
    r"(?<=[.!?])[\"'”’)\]]*\s+|(?<=[。！？])[”’」』）]*\s*|\n\s*\n|\n(?=\s*(?:[-*•#]|\d+[.)])\s)"
)


# Words that end in a full stop without ending a sentence.
def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_ABBREVIATIONS = _word_set(
    "mr mrs ms dr prof st sr jr mt ft vs etc e.g i.e cf al no nos fig figs vol pp ca approx "
    "inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m"
)
_LAST_WORD = re.compile(r"(\S+)\s*$")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.MULTILINE)
TABLE_RULE = re.compile(r"^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$")
# A source's preview: the first characters of its passage.
PREVIEW_CHARS = 200


def preview_of(passage: str) -> str:
    """The first `PREVIEW_CHARS` characters of a passage as a reader sees it: a Markdown table's
    rule line (`| --- |`) is markup, not content, and is left out (spreadsheets' previews began
    with it)."""
    lines = passage.split("\n")
    return "\n".join(line for line in lines if not TABLE_RULE.match(line))[:PREVIEW_CHARS]


_ROWS = re.compile(r"\brows? (\d+)(?:\s*-\s*(\d+))?\s*$")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[^\W\d_]+", re.UNICODE)
_STOP = _word_set(
    "a an the and or but if of to in on at by for with from as is are was were be been "
    "being it its this that these those there their they them he she his her him we our you "
    "your i me my do does did done have has had what which who whom whose when where why how "
    "can could would should will shall may might must not no than then so such into onto "
    "about over under up down out also any all each some more most other many much very "
    "just only own same too s t"
)
# A unit that shares the answer's words counts this much more than one that shares the question's.
ANSWER_WEIGHT = 2.0
# Neighbours are joined while the unit is shorter than this share of the budget.
SHORT_UNIT_SHARE = 0.5
# Characters a window of a long sentence keeps on each side of the words it is chosen for: the
# answer is next to them (on SQuAD's questions 20 held it less often; 40 to 80 alike).
EDGE_ROOM = 50
# Windows of a long sentence are tried this many characters apart (and flush with its end).
WINDOW_STEP = 5


class Highlight(BaseModel):
    """The span of the passage that best shows the cited fact."""

    text: str = Field(description=f"At most {HIGHLIGHT_CHARS} characters of the passage")
    start: int = Field(description="Offset of the span's first character in the passage")
    end: int = Field(description="Offset just past its last character (`passage[start:end]`)")
    row: int | None = Field(
        None, description="For a table row: its number in the sheet or table, as located"
    )


@dataclass(frozen=True)
class Unit:
    """A sentence, a table row or a heading line, at `passage[start:end]`."""

    start: int
    end: int
    row: int | None = None
    heading: int = 0  # a Markdown heading line's level (1 to 6), a table's caption 7

    @property
    def length(self) -> int:
        return self.end - self.start


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


def _folded(text: str) -> str:
    """Lower case without accents: "Temür" and "Temur" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def terms(text: str) -> list[str]:
    """The text's content words, lower-cased, unaccented and stemmed; numbers as written."""
    words = _TOKEN.findall(_folded(segmented(text)))
    kept = [word for word in words if word not in _STOP and (len(word) > 1 or word.isdigit())]
    return [_stem(word) for word in kept]


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return word if word[0].isdigit() else _stemmer().stemWord(word)


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the break found before `end` really ends a sentence (not "Dr." or "J.")."""
    word = _LAST_WORD.search(text, 0, end)
    if word is None:
        return True
    last = word.group(1).rstrip("\"'”’)]").lower()
    if not last.endswith("."):
        return True
    bare = last[:-1].lstrip("(\"'“‘")
    return not (bare in _ABBREVIATIONS or (len(bare) == 1 and bare.isalpha()))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _prose_units(
    text: str, start: int, end: int, headings: Sequence[tuple[int, int, int]]
) -> Iterable[Unit]:
    """The sentences of `text[start:end]`, and its heading lines as units of their own."""
    begin = start
    for first, last, level in headings:
        if start <= first and last <= end:
            yield from _sentences(text, begin, first)
            yield Unit(first, last, heading=level)
            begin = last
    yield from _sentences(text, begin, end)


def _sentences(text: str, start: int, end: int) -> Iterable[Unit]:
    begin = start
    for match in _SENTENCE_END.finditer(text, start, end):
        after_stop = "\n" not in match.group()
        if after_stop and not _ends_sentence(text, match.start()):
            continue
        first, last = _trimmed(text, begin, match.start())
        if first < last:
            yield Unit(first, last)
        begin = match.end()
    first, last = _trimmed(text, begin, end)
    if first < last:
        yield Unit(first, last)


def _heading_lines(passage: str) -> list[tuple[int, int, int]]:
    """The passage's Markdown heading lines outside code blocks, as the Markdown reader finds
    them: (start, end, level). A line that ends in a full stop is read as a sentence: headings
    rarely end so, while items of a list numbered with "#" and a heading that states its fact
    ("## Parking: behind the market.") do."""
    found = []
    in_code = False
    offset = 0
    for line in passage.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        heading = None if in_code else MARKDOWN_HEADING.match(line)
        first, last = _trimmed(passage, offset, offset + len(line))
        if heading and not passage[first:last].endswith("."):
            found.append((first, last, len(heading.group(1))))
        offset += len(line) + 1
    return found


def _first_row(location: str | None) -> int | None:
    match = _ROWS.search(location or "")
    return int(match.group(1)) if match else None


def units_of(passage: str, location: str | None = None) -> list[Unit]:
    """The passage's sentences and table rows in reading order. A table's header row and its
    `| --- |` rule are not units of their own; data rows are numbered from the location's
    first row ("Sheet1, rows 12-40") when it names one."""
    units: list[Unit] = []
    first_row = _first_row(location)
    position = 0
    data_rows = 0
    headings = _heading_lines(passage)
    lines = list(_TABLE_ROW.finditer(passage))
    for index, line in enumerate(lines):
        units.extend(_prose_units(passage, position, line.start(), headings))
        position = line.end()
        following = lines[index + 1] if index + 1 < len(lines) else None
        if TABLE_RULE.match(line.group()):
            continue
        if following is not None and TABLE_RULE.match(following.group()):
            data_rows = 0  # a header: its rows start after the rule
            _caption_as_heading(passage, units, line.start())
            continue
        start, end = _trimmed(passage, line.start(), line.end())
        row = first_row + data_rows if first_row is not None else None
        data_rows += 1
        units.append(Unit(start, end, row))
    units.extend(_prose_units(passage, position, len(passage), headings))
    return units


# The level a table's caption counts as: under any heading of the passage.
CAPTION_LEVEL = 7


def is_caption(line: str) -> bool:
    """Whether a line right above a table's header is its title: one line of text, no full
    stop, not a row of a table nor a Markdown heading (the passage's location already)."""
    text = line.strip()
    return (
        bool(text)
        and "\n" not in text
        and not text.startswith("#")
        and not text.endswith((".", "!", "?", "|"))
    )


def _caption_as_heading(passage: str, units: list[Unit], header: int) -> None:
    """The line right above a table's header, when it is a title ("NICS Firearm Background
    Checks November - 2015": one line, no full stop), counts as the table's heading: never
    shown alone, the best of its rows is."""
    if not units or units[-1].heading or units[-1].row is not None:
        return
    last = units[-1]
    text = passage[last.start : last.end]
    if passage[last.end : header].strip() or not is_caption(text):
        return
    units[-1] = Unit(last.start, last.end, heading=CAPTION_LEVEL)


class Weights:
    """How much each term counts: its inverse frequency among a set of units (the passages an
    answer was given), so a rare name counts more than a word every sentence has."""

    def __init__(self, unit_terms: Iterable[set[str]]) -> None:
        self.frequency: Counter[str] = Counter()
        self.count = 0
        for found in unit_terms:
            self.frequency.update(found)
            self.count += 1

    def of(self, term: str) -> float:
        return math.log(1 + (self.count + 1) / (self.frequency.get(term, 0) + 0.5))


@dataclass(frozen=True)
class _Scored:
    unit: Unit
    score: float


def _score(found: set[str], wanted: dict[str, float]) -> float:
    return sum(weight for term, weight in wanted.items() if term in found)


def _wanted(text: str, weights: Weights) -> dict[str, float]:
    return {term: weights.of(term) for term in set(terms(text))}


def _span(passage: str, units: Sequence[Unit], index: int, scores: Sequence[float]) -> Unit:
    """The best unit, joined with its better neighbour in the same paragraph while it is short
    and the join fits (a table row stands alone)."""
    first = last = index
    if units[index].row is not None:
        return units[index]

    def joinable(neighbour: int) -> bool:
        unit = units[neighbour]
        start, end = min(units[first].start, unit.start), max(units[last].end, unit.end)
        gap = passage[min(units[last].end, unit.end) : max(units[first].start, unit.start)]
        return (
            unit.row is None
            and not unit.heading
            and end - start <= HIGHLIGHT_CHARS
            and "\n\n" not in gap
        )

    while units[last].end - units[first].start < HIGHLIGHT_CHARS * SHORT_UNIT_SHARE:
        options = [i for i in (first - 1, last + 1) if 0 <= i < len(units) and joinable(i)]
        if not options:
            break
        pick = max(options, key=lambda i: (scores[i], i > last))
        first, last = min(first, pick), max(last, pick)
    return Unit(units[first].start, units[last].end)


def _matches(
    passage: str, start: int, end: int, wanted: dict[str, float]
) -> list[tuple[int, int, float]]:
    """Where the wanted terms occur in `passage[start:end]`: (start, end, weight)."""
    found: list[tuple[int, int, float]] = []
    for match in _TOKEN.finditer(passage, start, end):
        word = match.group()
        if is_cjk(word):  # its pairs of characters are its terms
            pairs = ((match.start() + i, word[i : i + 2]) for i in range(len(word) - 1))
            found.extend((at, at + 2, wanted[pair]) for at, pair in pairs if pair in wanted)
            continue
        term = _stem(_folded(word))
        if term in wanted:
            found.append((match.start(), match.end(), wanted[term]))
    return found


def _fit(passage: str, unit: Unit, wanted: dict[str, float]) -> tuple[int, int]:
    """A span of at most HIGHLIGHT_CHARS: the unit, or the window of it that holds the most
    of the wanted terms (each counted once); among equals, the one that reaches the sentence's
    end (a sentence tends to put what is new, the answer, last), then the one with the terms
    most central (the answer is usually next to the words of the question, on either side).
    Cut at word boundaries."""
    if unit.length <= HIGHLIGHT_CHARS:
        return unit.start, unit.end
    matches = _matches(passage, unit.start, unit.end, wanted)
    # A word the sentence repeats does not say where in it the fact is: its weight is shared.
    repeats = Counter(passage[a:b].lower() for a, b, _ in matches)
    matches = [(a, b, weight / repeats[passage[a:b].lower()]) for a, b, weight in matches]
    best: tuple[float, bool, int, int] | None = None
    for start in _window_starts(unit):
        end = start + HIGHLIGHT_CHARS
        # A word counts when the window leaves room around it (the answer is next to it),
        # or the window reaches the sentence's edge there.
        low = start + (EDGE_ROOM if start > unit.start else 0)
        high = end - (EDGE_ROOM if end < unit.end else 0)
        inside = [m for m in matches if m[0] >= low and m[1] <= high]
        score = sum({passage[a:b].lower(): w for a, b, w in inside}.values())
        margin = min(inside[0][0] - start, end - inside[-1][1]) if inside else 0
        # The end wins only for matched prose: a window of nothing matched stays at the start,
        # and a table row's first cells (what names the row) are kept.
        ends_it = score > 0 and end >= unit.end and unit.row is None
        key = (round(score, 6), ends_it, margin, -start)
        if best is None or key > best:
            best = key
    assert best is not None
    start = -best[3]
    end = start + HIGHLIGHT_CHARS
    if start > unit.start and not passage[start - 1].isspace():
        space = passage.find(" ", start, end)
        start = space + 1 if space != -1 else start
    if end < unit.end and not passage[end].isspace():
        space = passage.rfind(" ", start, end)
        end = space if space > start else end
    return _trimmed(passage, start, end)


def _window_starts(unit: Unit) -> list[int]:
    """Where the windows of a long unit start: every WINDOW_STEP characters, and the last one
    flush with the unit's end (a step past it would leave the sentence's last words out)."""
    last = unit.end - HIGHLIGHT_CHARS
    starts = list(range(unit.start, last + 1, WINDOW_STEP))
    if not starts or starts[-1] != last:
        starts.append(last)
    return starts


def _said_under(units: Sequence[Unit], index: int, scores: Sequence[float]) -> int:
    """For a heading, the unit that says something in its section: the best-scoring (of those
    alike, the first) of the units under it, its subsections' included, up to the next heading
    of its level or above; the heading itself when there are none. A heading names a topic,
    and quoted alone ("## Parking") answers nothing: its words are the chunk's location
    already. (The match keeps the heading's score: its section is what was asked about.)"""
    level = units[index].heading
    if not level:
        return index
    section: list[int] = []
    for later in range(index + 1, len(units)):
        deeper = units[later].heading
        if deeper and deeper <= level:
            break
        if not deeper:
            section.append(later)
    return max(section, key=lambda i: (scores[i], -i)) if section else index


def _best_unit(passage: str, units: Sequence[Unit], scores: Sequence[float], question: str) -> int:
    """The best-scoring unit; of units that score alike (a passage whose sentences all name its
    topic), one that is not a heading, then the one holding more of the question's words next
    to each other in the question's order ("night ferry" for "When does the night ferry
    leave?"), then one holding what the question asks for (`holds_asked_kind`), then the
    first.
    Over SQuAD dev's questions ties are about one in nine; broken so, the chosen sentence holds
    the answer 85.2% of the time on the 1,000 judged paragraphs (84.6% taking the first) and
    85.3% on the other 9,570 (84.6%)."""
    top = max(scores)
    tied = [i for i, score in enumerate(scores) if math.isclose(score, top, rel_tol=1e-9)]
    if len(tied) == 1:
        return tied[0]
    pairs = _adjacent_pairs(terms(question))
    kind = asked_kind(question)
    said = {word.lower() for word in re.findall(r"[^\W\d_][\w'’-]*", question)}

    def key(index: int) -> tuple[bool, int, bool, int]:
        text = passage[units[index].start : units[index].end]
        in_order = len(pairs & _adjacent_pairs(terms(text)))
        return not units[index].heading, in_order, holds_asked_kind(text, kind, said), -index

    return max(tied, key=key)


def _adjacent_pairs(words: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(words))


_ASKS_WHEN = re.compile(
    r"\b(?:when|what (?:year|month|date|day|century|decade)|which (?:year|month|century))\b"
)
_ASKS_HOW_MANY = re.compile(
    r"\bhow (?:many|much|long|old|far|large|big|tall|high)\b|"
    r"\bwhat (?:percent|percentage|number)\b|\bwhat (?:is|was|are|were) the value of\b"
)
_ASKS_WHO_OR_WHERE = re.compile(r"\b(?:who|whom|whose|where)\b")
_YEAR_OR_MONTH = re.compile(
    r"\b(?:1\d{3}|20\d{2})s?\b|\b(?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million|"
    r"billion|dozen)\b",
    re.IGNORECASE,
)
# A capitalised word that does not start a sentence: a name.
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z'’-]+")


AskedKind = Literal["date", "number", "name"]


def asked_kind(question: str) -> AskedKind | None:
    """What an English question asks for: "date", "number", "name", or None (unknown)."""
    asked = question.lower()
    if _ASKS_WHEN.search(asked):
        return "date"
    if _ASKS_HOW_MANY.search(asked):
        return "number"
    if _ASKS_WHO_OR_WHERE.search(asked):
        return "name"
    return None


def holds_asked_kind(text: str, kind: AskedKind | None, said: set[str]) -> bool:
    """Whether `text` holds something of the kind the question asks for: a year or month, a
    number, or a name not among the question's words (`said`, lower-cased)."""
    if kind == "date":
        return _YEAR_OR_MONTH.search(text) is not None
    if kind == "number":
        return _NUMBER.search(text) is not None
    if kind == "name":
        return any(match.group().lower() not in said for match in _NAME.finditer(text))
    return False


@dataclass(frozen=True)
class Match:
    """A passage's best span and how well it matched (the sum of its matched terms' weights)."""

    highlight: Highlight
    score: float
    # The whole sentence(s) the span was fitted from (the span may be cut to HIGHLIGHT_CHARS).
    whole: str


def best_match(
    passage: str,
    question: str,
    answer: str | None = None,
    *,
    location: str | None = None,
    weights: Weights | None = None,
    keep: Callable[[str], bool] | None = None,
) -> Match | None:
    """The span of `passage` that best matches the question (and the answer when given);
    None for a passage with no text. With `keep`, only a sentence (or row) whose text it keeps
    is chosen (None when it keeps none): "the one that gives a figure"."""
    units = units_of(passage, location)
    if not units:
        return None
    found = [set(terms(passage[unit.start : unit.end])) for unit in units]
    weights = weights or Weights(found)
    asked = _wanted(question, weights)
    answered = _wanted(answer, weights) if answer else {}
    scores = [
        _score(unit_terms, asked) + ANSWER_WEIGHT * _score(unit_terms, answered)
        for unit_terms in found
    ]
    if keep is not None:
        kept = [keep(passage[unit.start : unit.end]) for unit in units]
        if not any(kept):
            return None
        scores = [score if ok else -math.inf for score, ok in zip(scores, kept, strict=True)]
    best = _best_unit(passage, units, scores, question)
    span = _span(passage, units, _said_under(units, best, scores), scores)
    wanted = dict(asked)
    for term, weight in answered.items():
        wanted[term] = wanted.get(term, 0.0) + ANSWER_WEIGHT * weight
    start, end = _fit(passage, span, wanted)
    found_span = Highlight(text=passage[start:end], start=start, end=end, row=span.row)
    return Match(found_span, scores[best], passage[span.start : span.end])


def highlight(
    passage: str,
    question: str,
    answer: str | None = None,
    *,
    location: str | None = None,
    weights: Weights | None = None,
) -> Highlight | None:
    """The span of `passage` that best matches the question (and the answer when given)."""
    match = best_match(passage, question, answer, location=location, weights=weights)
    return match.highlight if match is not None else None


def weights_for(passages: Iterable[tuple[str, str | None]]) -> Weights:
    """Term weights over the units of every passage an answer was given."""
    return Weights(
        set(terms(passage[unit.start : unit.end]))
        for passage, location in passages
        for unit in units_of(passage, location)
    )
