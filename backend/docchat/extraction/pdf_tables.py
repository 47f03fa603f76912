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
from docchat.extraction.structure import MAX_COLUMNS, rows_label, table_parts

logger = logging.getLogger(__name__)

# A page whose content stream has fewer line and rectangle operators than this draws no table.
MIN_RULE_OPERATORS = 8
_RULE_OPERATOR = re.compile(rb"(?<![^\s\]])(?:re|l)(?=\s)")
# Past these, a page's "tables" are a pattern or a file built to exhaust the reader.
MAX_TABLES_PER_PAGE = 20
MAX_CELLS_PER_PAGE = 5_000
# A table has at least 2 rows and 2 columns, at least this share of its cells hold text, and
# its cells hold this many letters or digits in all.
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
        len(rows) >= 2
        and max(len(row) for row in rows) >= 2
        and len(filled) >= MIN_FILLED_SHARE * len(cells)
        and sum(char.isalnum() for cell in filled for char in cell) >= MIN_TABLE_CHARS
    )


def _rows(table: Any) -> list[list[str]]:
    """The table's rows of text, without rows and columns that are empty throughout."""
    rows = [[_cell(cell) for cell in row[:MAX_COLUMNS]] for row in table.extract()]
    rows = [row for row in rows if any(row)]
    width = max((len(row) for row in rows), default=0)
    used = [i for i in range(width) if any(i < len(row) and row[i] for row in rows)]
    return [[row[i] if i < len(row) else "" for i in used] for row in rows]


Box = tuple[float, float, float, float]


def _centred_in(obj: dict[str, Any], boxes: Sequence[Box]) -> bool:
    """Whether a page object's centre is inside one of the boxes (a character of a line right
    under a table may reach into its box: it is not in the table)."""
    x = (obj["x0"] + obj["x1"]) / 2
    y = (obj["top"] + obj["bottom"]) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _prose(
    drawn: Any, boxes: Sequence[Box], top: float, bottom: float, number: int
) -> list[PageText]:
    """The page's text between `top` and `bottom` (centres), outside the tables."""

    def kept(obj: dict[str, Any]) -> bool:
        middle = (obj["top"] + obj["bottom"]) / 2
        return top <= middle < bottom and not _centred_in(obj, boxes)

    text = drawn.filter(kept).extract_text() or ""
    return [PageText(page=number, text=text)] if text.strip() else []


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
                return self._parts(drawn, number)
            finally:
                drawn.close()  # its parsed objects are not kept for the next page
        finally:
            self._left -= time.monotonic() - started

    def _parts(self, drawn: Any, number: int) -> list[PageText] | None:
        found = drawn.find_tables()
        if len(found) > MAX_TABLES_PER_PAGE:
            return None
        tables = [(table, _rows(table)) for table in found]
        tables = [(table, rows) for table, rows in tables if _is_table(rows)]
        if not tables or sum(len(row) for _, rows in tables for row in rows) > MAX_CELLS_PER_PAGE:
            return None
        tables.sort(key=lambda found: (found[0].bbox[1], found[0].bbox[0]))
        boxes = [table.bbox for table, _ in tables]
        parts: list[PageText] = []
        above = 0.0
        for index, (table, rows) in enumerate(tables, start=1):
            parts.extend(_prose(drawn, boxes, above, table.bbox[1], number))
            parts.extend(_table_parts(rows, number, f"table {index}"))
            above = max(above, table.bbox[1])
        parts.extend(_prose(drawn, boxes, above, float("inf"), number))
        return parts or [PageText(page=number, text="")]

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None


def _table_parts(rows: list[list[str]], number: int, name: str) -> list[PageText]:
    """The table as parts of whole rows under its header (its first row), located by their
    rows: "table 2, rows 2-9" (the header is row 1)."""
    header, body = rows[0], rows[1:]
    numbered = list(enumerate(body, start=2))
    return [
        PageText(
            page=number,
            text=part.text,
            location=f"{name}, {rows_label(part.first_row, part.last_row)}",
        )
        for part in table_parts(header, numbered)
    ]
