"""Sources that disagree: different values for the asked thing in the best passages of
different documents, shown to the reader rather than resolved silently.

Two reports giving different staff numbers, an old and a new policy giving different dates:
retrieval finds both, and a model (or a quote) that picks one hides that the documents disagree.
`detect` looks, for a question that asks for a date, a number or a name, at the best-matching
sentence of each document among the passages that gives a value of that kind (each one must
match the question about as well as the best, and mention the question's own figures); when
two documents' sentences hold values of the asked kind and share none of them, the documents
disagree. `note` says so in the answer, each side with its citation and date, the newer marked.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from docchat.answers.evidence import (
    IDENTIFIER,
    NUMBER,
    NUMBER_WORD,
    NUMBER_WORDS,
    Needs,
    counts,
    figures_in,
    gives_length,
    gives_measure,
    names_mentioned,
)
from docchat.answers.meta import Conflict, ConflictSide
from docchat.retrieval.citations import MARKER
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.highlight import AskedKind, Weights, best_match, terms, weights_for
from docchat.retrieval.passage_identity import NAME_CHARS, one_line
from docchat.retrieval.schemas import Source

# A document's sentence takes a side when it matches the question at least this well, as a
# share of the best sentence's match.
SIDE_SHARE = 0.5
# Passages looked at: the best few (retrieval's order); the rest rarely hold the answer.
PASSAGES_LOOKED_AT = 6
MAX_SIDES = 3
# Two sentences are about the same asked thing when they share this share of the question's
# words that either holds.
SAME_THING_SHARE = 0.5

# A question that asks for several things ("Which contracts set a penalty, and what are the
# amounts?", "List each office's opening hours") expects a value from each document: different
# values are its answer, not a disagreement.
_ASKS_FOR_SEVERAL = re.compile(
    r"\bwhich\s+(?:(?:of\s+)?(?:the|our|my|your|these|those)\s+)?(?!does\b|this\b|"
    r"was\b|has\b|is\b|its\b|always\b|address\b|process\b|status\b|class\b)[a-z]{3,}s\b"
    r"|\b(?:list|each|every|all\s+the|compare)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})s?\b")
_MONTH = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|"
    r"december)\b",
    re.IGNORECASE,
)
# A setting's default given as a word ("The default value is replica"): a value of its own.
_DEFAULT_IS = re.compile(
    r"\bdefault(?: value)?(?: of [\w.]+)? is (?:\w+ly )?([\w.-]+)", re.IGNORECASE
)
# Capitalised words on one line, with the particles of names between ("Ursula von der Leyen").
_NAME = re.compile(
    r"\b[A-Z][\w'’-]+(?:[ \t]+(?:(?:of|de|van|von|der|den|du|la|le)[ \t]+)*[A-Z][\w'’-]+)*"
)


@dataclass(frozen=True)
class Side:
    entry: ContextEntry
    # The sentence that says it, and the values of the asked kind it gives (as written).
    span: str
    values: tuple[str, ...]
    dated: date | None
    # The question's words the sentence holds: two sides must be about the same asked thing.
    matched: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Disagreement:
    about: str
    sides: tuple[Side, ...]

    @property
    def newest(self) -> Side | None:
        dated = [side for side in self.sides if side.dated is not None]
        if len(dated) < 2:
            return None
        latest = max(dated, key=lambda side: side.dated or date.min)
        tied = [side for side in dated if side.dated == latest.dated]
        return latest if len(tied) == 1 else None


def _normalised(value: str, kind: AskedKind) -> str:
    if kind == "name":
        return value.lower()
    return NUMBER_WORDS.get(value.lower()) or re.sub(r"[,\u202f ]", "", value.lower())


def values_of(text: str, kind: AskedKind, needs: Needs) -> tuple[str, ...]:
    """The values of the asked kind a sentence gives, as written, leaving out the question's
    own figures and words (they are what it asks about, not the answer)."""
    if kind == "date":
        found = [match.group(1) for match in _YEAR.finditer(text)]
        found += [match.group(1).capitalize() for match in _MONTH.finditer(text)]
        found = [value for value in found if not (figures_in(value) & needs.figures)]
    elif kind == "number":
        found = _numbers_of(text, needs)
    else:
        found = _names_of(text, needs)
    return tuple(dict.fromkeys(found))


def _numbers_of(text: str, needs: Needs) -> list[str]:
    numbers = [*NUMBER.finditer(text), *NUMBER_WORD.finditer(text)]
    numbers = sorted(
        (match for match in numbers if not _part_of_a_name_or_day(text, match)),
        key=lambda match: match.start(),
    )
    if needs.counted is not None:  # "how many days": 30 days, not 6 euros a day
        numbers = [match for match in numbers if counts(text, match.end(), needs.counted)]
    elif needs.asks_length:  # "how tall": 187 feet, not "over the next five years"
        numbers = [match for match in numbers if gives_length(text[match.end() :])]
    found = [_signed(text, match) for match in numbers]
    found = [value for value in found if not (figures_in(value) & needs.figures)]
    found += [
        word
        for match in _DEFAULT_IS.finditer(text)
        if not NUMBER.match(word := match.group(1)) and terms(word)
    ]
    # "Annual report 2024 ... 19 bakers": a year beside other numbers dates the count.
    not_years = [value for value in found if not _YEAR.fullmatch(value)]
    return not_years or found


def _signed(text: str, number: re.Match[str]) -> str:
    """The number with its minus sign ("The default setting is -1"), not a range's dash."""
    start = number.start()
    negative = start > 0 and text[start - 1] == "-" and (start == 1 or text[start - 2].isspace())
    return f"-{number.group()}" if negative else number.group()


# "PostgreSQL 15", "Super Bowl 50": a number after a name is part of it; "13 October": a day.
_NAMED_BEFORE = re.compile(r"\b[A-Z][\w'’-]*\s+$")


def _part_of_a_name_or_day(text: str, number: re.Match[str]) -> bool:
    after = text[number.end() : number.end() + 12]
    before = text[max(0, number.start() - 30) : number.start()]
    if _MONTH.match(after.strip()) or _MONTH.search(before[-12:]) is not None:
        return True
    named = _NAMED_BEFORE.search(before)
    if named is None or _starts_sentence(text, number.start() - len(named.group())):
        return False
    # "In the United States 80% of ...": a measure after a name is still a value.
    return not gives_measure(text[number.start() : number.end() + 16])


# Words that open a sentence or a clause before a name ("The European Commission", "In
# December"): not part of it.
_OPENERS = frozenset(("the", "a", "an", "in", "on", "at", "by", "for", "from", "of", "to", "as"))


def _names_of(text: str, needs: Needs) -> list[str]:
    """Names in the sentence that the question does not give: runs of capitalised words, one
    that opens a sentence (or a line) only when two or more words long ("William Ruto was
    sworn in"), without an opening article, preposition or word of the question ("President
    Uhuru Kenyatta" is "Uhuru Kenyatta" to "Who is the President of Kenya?") and never a
    month alone."""
    asked = set(terms(" ".join(needs.said)))
    text = _unwrapped(text)
    found = []
    for match in _NAME.finditer(text):
        words = match.group().split()
        opens = _starts_sentence(text, match.start())
        if opens and len(words) < 2:
            continue
        while words and words[0].lower() in _OPENERS:
            words = words[1:]
        while len(words) > 2 and set(terms(words[0])) <= asked:
            words = words[1:]
        name = " ".join(words)
        if not words or _MONTH.fullmatch(name) or set(terms(name)) <= asked:
            continue
        if needs.asks_person and not _a_person(words):
            continue
        found.append(name)
    return found


# The last word of an institution's or a thing's name, not a person's ("Legislative Assembly").
_INSTITUTIONS = frozenset(
    (
        "act", "agency", "army", "assembly", "association", "bank", "board", "bureau", "church",
        "club", "college", "commission", "committee", "community", "company", "congress",
        "constitution", "corporation", "council", "court", "department", "government", "group",
        "house", "institute", "kingdom", "league", "ministry", "museum", "navy", "network",
        "office", "organisation", "organization", "parliament", "party", "republic", "school",
        "senate", "service", "society", "states", "team", "treaty", "union", "university", "war",
    )
)  # fmt: skip


def _a_person(words: Sequence[str]) -> bool:
    """Whether a name may be a person's: two words or more ("Jacinta Allan"), the last not an
    institution's ("Legislative Assembly")."""
    return len(words) > 1 and words[-1].lower() not in _INSTITUTIONS


# A line this long that ends inside a sentence was wrapped (a PDF's lines): a name may go on
# after it ("Tricia\nMarwick"). A short one is a title or a heading.
WRAPPED_LINE_CHARS = 50


def _unwrapped(text: str) -> str:
    lines = text.split("\n")
    joined = lines[0]
    for previous, line in itertools.pairwise(lines):
        ends = previous.rstrip().endswith((".", ":", "!", "?"))
        wrapped = len(previous) >= WRAPPED_LINE_CHARS and not ends
        joined += (" " if wrapped else "\n") + line
    return joined


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t")
    return not before or before.endswith((".", "!", "?", "\n"))


def _about_the_names(entry: ContextEntry, span: str, names: Sequence[str]) -> bool:
    """Whether a passage can take a side on what the question names: it mentions one of the
    names, or (settings and other identifiers) its sentence names no other identifier: a
    manual's sentence under its heading ("The default is 100 connections") need not repeat the
    setting's name, and one that names another setting is about that one."""
    source = entry.source
    if names_mentioned(f"{entry.text}\n{source.document_name}\n{source.location or ''}", names):
        return True
    return all(IDENTIFIER.search(name) for name in names) and IDENTIFIER.search(span) is None


def _same_thing(one: Side, other: Side) -> bool:
    """Whether two sentences are about the same asked thing: most of the question's words
    either holds, the other holds too ("Lighthouse built by ...; Lumen ferry to ..." matches
    two sentences about two things)."""
    either = one.matched | other.matched
    return bool(either) and len(one.matched & other.matched) >= SAME_THING_SHARE * len(either)


def _disjoint(one: Side, other: Side, kind: AskedKind) -> bool:
    ours = {_normalised(value, kind) for value in one.values}
    theirs = {_normalised(value, kind) for value in other.values}
    if kind == "name":
        return _names_disjoint(ours, theirs)
    if kind == "date" and (_within(ours, theirs) or _within(theirs, ours)):
        return False
    return not ours & theirs


def _names_disjoint(ours: set[str], theirs: set[str]) -> bool:
    """Whether two sentences name different answers: a name both give is context ("the EU's"),
    unless it is a full name (the same person); "Smith" and "John Smith" are one person."""
    both = ours & theirs
    if any(len(name.split()) > 1 for name in both):
        return False
    ours, theirs = ours - both, theirs - both
    return bool(ours and theirs) and not any(a in b or b in a for a in ours for b in theirs)


def _within(years: set[str], span: set[str]) -> bool:
    """Whether `years` fall inside the years a sentence spans ("1754 to 1763" holds 1759)."""
    bounds = sorted(int(year) for year in span if year.isdigit())
    found = [int(year) for year in years if year.isdigit()]
    return len(bounds) >= 2 and bool(found) and all(bounds[0] <= y <= bounds[-1] for y in found)


def detect(
    question: str,
    needs: Needs,
    entries: Sequence[ContextEntry],
    *,
    dated: Callable[[Source], date | None],
    weights: Weights | None = None,
) -> Disagreement | None:
    """The documents among `entries` that give different values for what the question asks
    (figures, when it does not say what kind of thing it asks for); None when they agree or
    give none."""
    if asks_for_several(question):
        return None
    # "What was Fresno's population in 2015?", "What is the default of work_mem?": a question
    # that does not say what kind of thing it asks for is compared on the figures it is given.
    kind: AskedKind = needs.kind or "number"
    asked = frozenset(terms(question))
    looked_at = [entry for entry in entries[:PASSAGES_LOOKED_AT] if entry.text.strip()]
    weights = weights or weights_for((entry.text, entry.source.location) for entry in looked_at)
    best_by_document: dict[str, tuple[float, Side]] = {}

    def gives_values(sentence: str) -> bool:
        return bool(values_of(sentence, kind, needs))

    for rank, entry in enumerate(looked_at):
        # The sentence that best matches of those that give a value: the passage's best match
        # may be about the asked thing without giving it ("The Premier of Victoria is the
        # leader of the party with the most seats").
        match = best_match(
            entry.text,
            question,
            location=entry.source.location,
            weights=weights,
            keep=gives_values,
        )
        if match is None or match.score <= 0:
            continue
        span = match.highlight.text
        if needs.figures - figures_in(f"{entry.text}\n{entry.source.document_name}"):
            continue  # about another year or figure than the question's
        if needs.names and not _about_the_names(entry, span, needs.names):
            continue
        # A sentence need not repeat what its document is about ("The tower was erected to its
        # full 187 feet" in "Nikola Tesla"): the question's words in the document's name and
        # in the sentence it follows count.
        said = f"{match.whole}\n{entry.source.document_name}\n{entry.source.location or ''}"
        score = sum(weights.of(term) for term in asked & frozenset(terms(said))) / (1 + 0.1 * rank)
        document = str(entry.source.document_id)
        if document in best_by_document and best_by_document[document][0] >= score:
            continue
        matched = asked & frozenset(terms(f"{span}\n{entry.source.document_name}"))
        # Its values from the whole sentence: the span may be cut before them.
        values = values_of(match.whole, kind, needs)
        side = Side(entry, span, values, dated(entry.source), matched)
        best_by_document[document] = (score, side)
    if len(best_by_document) < 2:
        return None
    ranked = sorted(best_by_document.values(), key=lambda scored: scored[0], reverse=True)
    top = ranked[0][0]
    sides = [side for score, side in ranked if score >= SIDE_SHARE * top and side.values]
    if len(sides) < 2 or ranked[0][1] not in sides:
        return None
    first = sides[0]
    disagreeing = [first] + [
        side for side in sides[1:] if _same_thing(first, side) and _disjoint(first, side, kind)
    ]
    if len(disagreeing) < 2:
        return None
    return Disagreement(_about(question), tuple(disagreeing[:MAX_SIDES]))


def asks_for_several(question: str) -> bool:
    """Whether `question` asks for a list, or a thing of each of several ("which contracts",
    "each office's hours", "compare ..."), rather than one value."""
    return _ASKS_FOR_SEVERAL.search(question) is not None


def _about(question: str) -> str:
    return " ".join(question.strip().rstrip("?").split())[:200]


def _side_words(side: Side, newest: Side | None) -> str:
    # A name is someone's choice: one line, and no "[2]" in it to pose as a citation.
    label = f"“{one_line(side.entry.source.document_name, NAME_CHARS)}”"
    dated = [side.dated.isoformat()] if side.dated is not None else []
    if side is newest:
        dated.append("the newest")
    when = f" ({', '.join(dated)})" if dated else ""
    # Its marker after what it says, as every citation of an answer.
    return f"{label}{when} gives {' / '.join(side.values)} [{side.entry.number}]"


def note(disagreement: Disagreement) -> str:
    """The sentence an answer ends with: the sides, each with its date and citation."""
    newest = disagreement.newest
    sides = "; ".join(_side_words(side, newest) for side in disagreement.sides)
    return f"The sources disagree: {sides}."


def numbered(disagreement: Disagreement, sources: Sequence[Source]) -> list[Conflict]:
    """The disagreement as `meta.conflicts`, each side numbered as the answer's `sources` are
    (after their renumbering); empty when fewer than two sides are among the sources."""
    newest = disagreement.newest
    sides: list[ConflictSide] = []
    for side in disagreement.sides:
        at = _position(side.entry.source, sources)
        if at is None:
            continue
        sides.append(
            ConflictSide(
                source=at,
                value=" / ".join(side.values),
                date=side.dated.isoformat() if side.dated else None,
                newest=side is newest,
            )
        )
    return [Conflict(about=disagreement.about, sides=sides)] if len(sides) > 1 else []


def _position(source: Source, sources: Sequence[Source]) -> int | None:
    for number, cited in enumerate(sources, start=1):
        if (cited.document_id, cited.page, cited.location) == (
            source.document_id,
            source.page,
            source.location,
        ):
            return number
    return None


def dated(source: Source) -> date | None:
    """A source's date: its document's own, else its upload date (`Source.document_date`)."""
    return source.document_date


def all_cited(disagreement: Disagreement, answer: str) -> bool:
    """Whether the answer cites every side (by the passages' numbers, before renumbering)."""
    cited = {int(raw) for marker in MARKER.finditer(answer) for raw in marker.group(1).split(",")}
    return all(side.entry.number in cited for side in disagreement.sides)


def entries_of(entries: Sequence[ContextEntry], sources: Sequence[Source]) -> list[ContextEntry]:
    """The entries an answer's (renumbered) sources came from."""
    return [entry for entry in entries if _position(entry.source, sources) is not None]


# How much of a passage's best sentence a side quotes when the model named the disagreement
# and the engine found no values to compare.
STATED_VALUE_CHARS = 160


def stated(
    question: str, numbers: Sequence[int], entries: Sequence[ContextEntry]
) -> Disagreement | None:
    """The disagreement a model stated between passages `numbers`: each side its passage's
    best sentence; None unless they are of two documents or more."""
    by_number = {entry.number: entry for entry in entries}
    sides: list[Side] = []
    documents: set[str] = set()
    for number in numbers:
        entry = by_number.get(number)
        if entry is None or str(entry.source.document_id) in documents:
            continue
        match = best_match(entry.text, question, location=entry.source.location)
        span = (match.highlight.text if match else entry.text).strip()
        value = " ".join(span.split())[:STATED_VALUE_CHARS]
        sides.append(Side(entry, span, (value,), dated(entry.source)))
        documents.add(str(entry.source.document_id))
    if len(sides) < 2:
        return None
    return Disagreement(_about(question), tuple(sides[:MAX_SIDES]))
