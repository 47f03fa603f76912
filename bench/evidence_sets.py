"""The evidence evaluation sets (`bench/datasets/evidence-*`) and how their answers are judged,
apart from the service: read by `bench/eval_evidence.py` and checked by a unit test.

- unanswerable: questions near the collections' topics that their documents cannot answer
  (outdated, wrong entity, wrong place or year, a missing figure), each with why;
- answerable: SQuAD's and the manual's own questions with their answer strings (controls);
- conflicts: pairs of small dated documents that disagree on one fact, and the question. Each
  document is rendered as the file a user would upload (`render`): a PDF whose /CreationDate is
  its date, or an HTML page with `<meta name="date">`; both also say the date in their text.

Judging is independent of the engine's own checks (`claims`, `holds`): an answer's cited claims
are the stretches of text before each group of `[n]` markers, and a claim is supported when
every fact it states (a gold answer, or one side's value of a conflict) is also in a passage it
cites.
"""

from __future__ import annotations

import datetime
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

DATASETS = Path(__file__).parent / "datasets"
UNANSWERABLE = DATASETS / "evidence-unanswerable" / "questions.jsonl"
ANSWERABLE = DATASETS / "evidence-answerable" / "questions.jsonl"
CONFLICTS = DATASETS / "evidence-conflicts" / "pairs.jsonl"
KINDS = ("outdated", "wrong_entity", "wrong_place_or_year", "missing_figure")
COLLECTIONS = ("squad-dev", "postgresql-manual")


@dataclass(frozen=True)
class Unanswerable:
    id: str
    collection: str
    near: str
    kind: str
    text: str
    why: str


@dataclass(frozen=True)
class Answerable:
    id: str
    collection: str
    source_id: str
    near: str
    text: str
    answers: tuple[str, ...]
    # The judged unit: a SQuAD paragraph ("<article>-<paragraph>") or a manual page id.
    judged: str


@dataclass(frozen=True)
class ConflictDocument:
    filename: str
    title: str
    date: str  # ISO 8601 day
    format: str  # "pdf" | "html"
    text: str
    value: str
    aliases: tuple[str, ...]

    @property
    def variants(self) -> tuple[str, ...]:
        return (self.value, *self.aliases)


@dataclass(frozen=True)
class ConflictPair:
    id: str
    collection: str
    near: str
    text: str
    about: str
    documents: tuple[ConflictDocument, ConflictDocument]

    @property
    def newer(self) -> ConflictDocument:
        return max(self.documents, key=lambda document: document.date)


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def unanswerable(path: Path = UNANSWERABLE) -> list[Unanswerable]:
    return [
        Unanswerable(
            str(row["_id"]),
            str(row["collection"]),
            str(row["near"]),
            str(row["kind"]),
            str(row["text"]),
            str(row["why"]),
        )
        for row in _jsonl(path)
    ]


def answerable(path: Path = ANSWERABLE) -> list[Answerable]:
    return [
        Answerable(
            str(row["_id"]),
            str(row["collection"]),
            str(row["source_id"]),
            str(row["near"]),
            str(row["text"]),
            tuple(str(answer) for answer in row["answers"]),  # type: ignore[attr-defined]
            str(row["judged"]),
        )
        for row in _jsonl(path)
    ]


def _document(row: dict[str, object]) -> ConflictDocument:
    return ConflictDocument(
        str(row["filename"]),
        str(row["title"]),
        str(row["date"]),
        str(row["format"]),
        str(row["text"]),
        str(row["value"]),
        tuple(str(alias) for alias in row.get("aliases", ())),  # type: ignore[attr-defined]
    )


def conflicts(path: Path = CONFLICTS) -> list[ConflictPair]:
    pairs = []
    for row in _jsonl(path):
        first, second = (_document(document) for document in row["documents"])  # type: ignore[attr-defined]
        pairs.append(
            ConflictPair(
                str(row["_id"]),
                str(row["collection"]),
                str(row["near"]),
                str(row["text"]),
                str(row["about"]),
                (first, second),
            )
        )
    return pairs


# -- the files of the conflicting documents ------------------------------------------------------


def _long_date(iso: str) -> str:
    day = datetime.date.fromisoformat(iso)
    return f"{day.day} {day.strftime('%B')} {day.year}"


def render(document: ConflictDocument) -> tuple[bytes, str]:
    """The document as a file and its content type: its date in the file's own metadata (PDF
    /CreationDate, HTML `<meta name="date">`) and in its text ("Published 14 June 2016.")."""
    published = f"Published {_long_date(document.date)}."
    if document.format == "html":
        page = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(document.title)}</title>\n"
            f'<meta name="date" content="{document.date}">\n</head>\n<body>\n'
            f"<h1>{html.escape(document.title)}</h1>\n<p>{published}</p>\n"
            f"<p>{html.escape(document.text)}</p>\n</body>\n</html>\n"
        )
        return page.encode(), "text/html"
    if document.format == "pdf":
        return _pdf(document, published), "application/pdf"
    raise ValueError(f"unknown format {document.format!r}")


def _pdf(document: ConflictDocument, published: str) -> bytes:
    from fpdf import FPDF  # a bench (dev) dependency, as for the tests' files

    pdf = FPDF()
    day = datetime.date.fromisoformat(document.date)
    pdf.set_creation_date(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC))
    pdf.set_title(document.title)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=14)
    pdf.multi_cell(0, 8, document.title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, published, new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, document.text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


# -- judging ------------------------------------------------------------------------------------

_SPACES = re.compile(r"\s+")
_DASHES = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " "})
MARKER_GROUP = re.compile(r"(?:\s*\[\d+(?:\s*,\s*\d+)*\])+")
_NUMBER = re.compile(r"\d+")
LINE_BREAKS = re.compile(r"\n+")


def _normal(text: str) -> str:
    return _SPACES.sub(" ", text.translate(_DASHES)).strip()


def _variants(value: str) -> set[str]:
    normal = _normal(value)
    found = {normal}
    if re.fullmatch(r"[\d,]+", normal) and "," in normal:
        found.add(normal.replace(",", ""))
    return {variant for variant in found if variant}


def holds(text: str, value: str) -> bool:
    """`value` occurs in `text` as a whole (not "100" inside "1000" or "12.8"), ignoring case,
    spacing and the kind of dash."""
    normal = _normal(text)
    for variant in _variants(value):
        pattern = r"(?<![\w.,])" + re.escape(variant) + r"(?![\w]|[.,]\d)"
        if re.search(pattern, normal, flags=re.IGNORECASE):
            return True
    return False


def holds_any(text: str, values: tuple[str, ...] | list[str]) -> bool:
    return any(holds(text, value) for value in values)


@dataclass(frozen=True)
class Claim:
    """A stretch of an answer and the sources (1-based, as its markers say) it cites."""

    text: str
    cites: tuple[int, ...]


def claims(answer: str) -> list[Claim]:
    """Each line's text before each group of markers, back to the previous group, with that
    group's numbers: in "A was 5 [1], B says 6 [2]." the claims are "A was 5" citing 1 and
    "B says 6" citing 2; in a quote "> One. Two. [1]" the claim is "One. Two." citing 1."""
    found = []
    for line in LINE_BREAKS.split(answer):
        cursor = 0
        for group in MARKER_GROUP.finditer(line):
            numbers = tuple(int(number) for number in _NUMBER.findall(group.group(0)))
            text = line[cursor : group.start()].strip(" ,;:.-\"'>")
            cursor = group.end()
            if text:
                found.append(Claim(text, numbers))
    return found


def supported(claim: Claim, facts: list[tuple[str, ...]], passages: dict[int, str]) -> bool | None:
    """Whether every fact the claim states (each fact: its accepted wordings) is in one of the
    passages it cites; None when it states none of them (not judged)."""
    stated = [fact for fact in facts if holds_any(claim.text, fact)]
    if not stated:
        return None
    cited = [passages.get(number, "") for number in claim.cites]
    return all(any(holds_any(passage, fact) for passage in cited) for fact in stated)


_MARKERS_AND_PUNCTUATION = re.compile(r"\[\d+\]|[\s.,;:!?()\[\]-]")


def is_bare(text: str) -> bool:
    """An answer that says nothing besides its citation markers ("[1]", "[2].")."""
    return bool(text.strip()) and not _MARKERS_AND_PUNCTUATION.sub("", text)
