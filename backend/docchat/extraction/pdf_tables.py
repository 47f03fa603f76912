"""Tables drawn on PDF pages, read as tables: each row a unit under its header, located by page,
table and rows, as spreadsheet rows are (`structure.table_parts`).

pdfplumber (MIT, on pdfminer.six) finds a table by the rules drawn around its cells and reads
each cell's text; pypdf, which reads every other page, has no notion of a table. pdfplumber is
about three times slower than pypdf on a page, so it only reads the pages whose content stream
draws rules (`draws_rules`): a text-only PDF never reaches it. What it reads there replaces
pypdf's text of the page: the text outside the tables, then each table.

A "table" made of a figure's lines (a plot's grid, a diagram) has empty or one-character cells:
it is no table, and the page keeps pypdf's text. A page with more tables or cells than a page
of a real document holds keeps pypdf's text too.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pdfplumber
from pypdf import PageObject
from pypdf.generic import ArrayObject, NameObject

from docchat.extraction.reader import PageText
from docchat.extraction.structure import MAX_COLUMNS, headed_table_parts

logger = logging.getLogger(__name__)

# A page whose content stream has fewer line and rectangle operators than this draws no table.
MIN_RULE_OPERATORS = 8
_RULE_OPERATOR = re.compile(rb"(?<![^\s\]])(?:re|l)(?=\s)")
# Past these, a page's "tables" are a pattern or a file built to exhaust the reader.
MAX_TABLES_PER_PAGE = 20
MAX_CELLS_PER_PAGE = 5_000
# A table has a header and at least two rows under it (a ruled box of one row is more often a
# frame around text than a table, and pypdf reads it as well), at least 2 columns, at least
# this share of its cells hold text, and its cells hold this many letters or digits in all.
MIN_ROWS = 3
MIN_FILLED_SHARE = 0.5
MIN_TABLE_CHARS = 20
# Reading tables stops after this many seconds of a document (the rest of its pages keep
# pypdf's text): a file of thousands of pages of tables must not spend the reader's whole time
# (WORKER_EXTRACT_SECONDS) on them and fail.
MAX_SECONDS_PER_DOCUMENT = 60.0


def draws_rules(page: PageObject) -> bool:
    """Whether the page's own content stream draws enough lines and rectangles to hold a
    table (a cheap scan of its operators; forms it paints are not looked into)."""
    contents = page.get(NameObject("/Contents"))
    if contents is None:
        return False
    contents = contents.get_object()
    # The streams' decoded bytes, not pypdf's parsed operations, which cost as much again.
    streams = contents if isinstance(contents, ArrayObject) else [contents]
    found = 0
    for stream in streams:
        data = stream.get_object().get_data()
        found += len(_RULE_OPERATOR.findall(data))
        if found >= MIN_RULE_OPERATORS:
            return True
    return False


# What pdfminer writes for a glyph whose font gives no Unicode value.
_NO_UNICODE = re.compile(r"\(cid:\d+\)")


def _cell(value: str | None) -> str:
    """The cell's text on one line, without what a glyph with no Unicode value (a flag, an
    icon, a plot's symbol) is read as."""
    text = _NO_UNICODE.sub("", value or "")
    text = "".join(char for char in text if unicodedata.category(char) != "Co")
    return " ".join(text.split())


def _is_table(rows: Sequence[Sequence[str]]) -> bool:
    cells = [cell for row in rows for cell in row]
    filled = [cell for cell in cells if any(char.isalnum() for char in cell)]
    return (
        len(rows) >= MIN_ROWS
        and max(len(row) for row in rows) >= 2
        and len(filled) >= MIN_FILLED_SHARE * len(cells)
        and sum(char.isalnum() for cell in filled for char in cell) >= MIN_TABLE_CHARS
    )


def _unstacked(row: Sequence[str | None]) -> list[list[str | None]]:
    """The row, or the rows drawn in it: a report that rules a line under every fifth row
    gives cells of five lines each ("Alabama\nAlaska\n..." beside "18,870\n209\n...").
    A row is such a stack when its filled cells all hold the same number of lines, at least
    three, or two in three or more cells (a wrapped phrase seldom wraps alike in them all)."""
    lines = [(cell or "").splitlines() for cell in row]
    counts = {len(cell_lines) for cell_lines in lines if cell_lines}
    filled = sum(1 for cell_lines in lines if cell_lines)
    if len(counts) != 1 or filled < 2:
        return [list(row)]
    (count,) = counts
    if count < 2 or (count == 2 and filled < 3):
        return [list(row)]
    return [
        [
            cell_lines[at] if cell_lines else cell
            for cell_lines, cell in zip(lines, row, strict=True)
        ]
        for at in range(count)
    ]


# Only a table's first rows can be a header whose cells group columns.
HEADER_ROWS = 3


def _spread_headers(table: Any, page: Any, extracted: list[list[str | None]]) -> None:
    """Header cells drawn across several columns ("Pre-Pawn" over "Handgun Long Gun *Other",
    no rule between them) read as one label per column: the text above each column, after the
    group's own line ("Pre-Pawn Long Gun"). A row of one cell across them all is a caption,
    left as it is."""
    widest = max(table.rows, key=lambda row: sum(cell is not None for cell in row.cells))
    if any(cell is None for cell in widest.cells):
        return
    columns = [(cell[0], cell[2]) for cell in widest.cells]
    for drawn, row in zip(table.rows[:HEADER_ROWS], extracted, strict=False):
        starts = [at for at, cell in enumerate(drawn.cells) if cell is not None]
        if len(starts) < 2 or len(starts) == len(drawn.cells):
            continue
        _, top, _, bottom = drawn.bbox
        for start, end in zip(starts, [*starts[1:], len(drawn.cells)], strict=True):
            if end - start < 2:
                continue
            lines = (row[start] or "").splitlines()
            group = lines[0].strip() if len(lines) > 1 else ""
            below = _below_first_line(page, (columns[start][0], top, columns[end - 1][1], bottom))
            for at in range(start, end):
                x0, x1 = columns[at]
                text = page.crop((x0, below if group else top, x1, bottom)).extract_text() or ""
                row[at] = " ".join([group, *text.split()]).strip()


def _below_first_line(page: Any, box: Box) -> float:
    """Where the first line of text in `box` ends (the box's top when it holds none)."""
    words = page.crop(box).extract_words()
    if not words:
        return box[1]
    first = min(word["top"] for word in words)
    # Past the line's bottom: a crop keeps what touches its edge.
    return float(max(word["bottom"] for word in words if word["top"] < first + 2)) + 0.5


# A cell of this many lines or more holds a passage, not a value.
PASSAGE_LINES = 3


def _boxes_of_text(rows: Sequence[Sequence[str | None]]) -> bool:
    """Whether most filled cells hold passages of several lines: boxes drawn around a page's
    sections (a market report's framed groups, each a list of its own rows beside a chart),
    which pypdf reads line by line better than as one cell each."""
    filled = [cell for row in rows for cell in row if cell and cell.strip()]
    long = [cell for cell in filled if len(cell.strip().splitlines()) >= PASSAGE_LINES]
    return len(long) > len(filled) / 2


def _rows(table: Any, page: Any = None) -> list[list[str]]:
    """The table's rows of text, without rows and columns that are empty throughout."""
    extracted = table.extract()
    if page is not None:
        _spread_headers(table, page, extracted)
    drawn = [part for row in extracted for part in _unstacked(row[:MAX_COLUMNS])]
    if _boxes_of_text(drawn):
        return []
    rows = [[_cell(cell) for cell in row] for row in drawn]
    rows = [row for row in rows if any(row)]
    width = max((len(row) for row in rows), default=0)
    used = [i for i in range(width) if any(i < len(row) and row[i] for row in rows)]
    return [[row[i] if i < len(row) else "" for i in used] for row in rows]


def _captioned(rows: list[list[str]]) -> tuple[str, list[list[str]]]:
    """The table's title, when its first row is one cell across a wide table ("NICS Firearm
    Background Checks November - 2015" over 25 columns), and its rows from the header on."""
    first = [cell for cell in rows[0] if cell]
    if len(rows) >= 3 and len(rows[0]) >= 3 and len(first) == 1:
        return first[0], rows[1:]
    return "", rows


Box = tuple[float, float, float, float]
# How far (points) a line's baseline may sit outside a table's box and still be in it.
EDGE = 1.0


def _fragments(page: PageObject) -> list[tuple[float, float, str]]:
    """The page's text as pypdf reads it (in the order its content draws it, which keeps a
    page's columns apart), each piece with where it starts: (x, top), from the page's top-left
    corner as pdfplumber measures."""
    fragments: list[tuple[float, float, str]] = []

    def visit(text: str, cm: list[float], tm: list[float], *_: object) -> None:
        x = cm[0] * tm[4] + cm[2] * tm[5] + cm[4]
        y = cm[1] * tm[4] + cm[3] * tm[5] + cm[5]
        fragments.append((x, y, text))

    page.extract_text(visitor_text=visit)
    left, top = float(page.mediabox.left), float(page.mediabox.top)
    return [(x - left, top - y, text) for x, y, text in fragments]


def _flush(prose: list[str], parts: list[PageText], number: int) -> None:
    """The prose read so far as a part (the blank lines the tables' cells left dropped)."""
    lines = "".join(prose).splitlines()
    text = "\n".join(line for line in lines if line.strip())
    if text:
        parts.append(PageText(page=number, text=text))
    prose.clear()


def _box_of(x: float, top: float, boxes: Sequence[Box]) -> int | None:
    for at, (x0, top0, x1, bottom0) in enumerate(boxes):
        if x0 - EDGE <= x <= x1 + EDGE and top0 - EDGE <= top <= bottom0 + EDGE:
            return at
    return None


class PdfTables:
    """The tables of one PDF's pages, the file opened by pdfplumber at the first page that
    draws rules (`close` when done)."""

    def __init__(self, path: Path, budget_seconds: float = MAX_SECONDS_PER_DOCUMENT) -> None:
        self.path = path
        self._pdf: Any = None
        self._left = budget_seconds

    def page_parts(self, page: PageObject, number: int) -> list[PageText] | None:
        """The page as its text outside the tables, then each table's parts (page `number`,
        1-based); None when the page holds no table, or the document's time for tables is
        spent, and pypdf's text stands."""
        if self._left <= 0 or not draws_rules(page):
            return None
        started = time.monotonic()
        try:
            if self._pdf is None:
                self._pdf = pdfplumber.open(self.path)
            drawn = self._pdf.pages[number - 1]
            try:
                return self._parts(drawn, page, number)
            finally:
                drawn.close()  # its parsed objects are not kept for the next page
        finally:
            self._left -= time.monotonic() - started

    def _parts(self, drawn: Any, page: PageObject, number: int) -> list[PageText] | None:
        found = drawn.find_tables()
        if len(found) > MAX_TABLES_PER_PAGE:
            return None
        tables = [(table, _rows(table, drawn)) for table in found]
        tables = [(table, rows) for table, rows in tables if _is_table(rows)]
        if not tables or sum(len(row) for _, rows in tables for row in rows) > MAX_CELLS_PER_PAGE:
            return None
        tables.sort(key=lambda found: (found[0].bbox[1], found[0].bbox[0]))
        boxes = [table.bbox for table, _ in tables]
        parts: list[PageText] = []
        prose: list[str] = []
        placed: set[int] = set()

        def place(at: int) -> None:
            """The prose read so far, then table `at` where the page's text reaches it."""
            _flush(prose, parts, number)
            caption, headed = _captioned(tables[at][1])
            parts.extend(
                PageText(page=number, text=text, location=where)
                for where, text in headed_table_parts(headed, f"table {at + 1}", caption)
            )
            placed.add(at)

        for x, top, text in _fragments(page):
            at = _box_of(x, top, boxes) if text.strip() else None
            if at is None:
                prose.append(text)
            elif at not in placed:
                place(at)
        for at in range(len(tables)):
            if at not in placed:
                place(at)
        _flush(prose, parts, number)
        return parts

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None
