"""The shapes every reader produces: sections under a heading path, and tables as Markdown.

A reader walks its file in reading order and feeds a `SectionWriter`: headings, paragraphs
and tables. Out come `PageText` parts, each with its location (the heading path, or the rows a
table part holds), so every chunk can say where it is. Tables are cut into parts of whole rows
that fit in a chunk, each with the header row again, so "the value in row X" stays answerable.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from docchat.extraction.reader import ExtractionError, PageText

# A table part stays under this many characters, so the chunker keeps it whole (chunks are
# 1,000 characters by default).
TABLE_PART_CHARS = 900
LOCATION_CHARS = 200
HEADING_CHARS = 80
SEPARATOR = " > "
MAX_TABLE_ROWS = 200_000
# A table whose next this-many rows are empty has ended (a "million empty rows" sheet ends here).
EMPTY_ROWS_TO_END = 1_000
MAX_COLUMNS = 60


def short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _header_lines(header: Sequence[str]) -> list[str]:
    return [markdown_row(header), "| " + " | ".join("---" for _ in header) + " |"]


def rows_label(first: int, last: int) -> str:
    return f"row {first}" if first == last else f"rows {first}-{last}"


@dataclass(frozen=True)
class TablePart:
    text: str
    first_row: int  # numbers as the reader counts them (a sheet's row numbers, say)
    last_row: int


def table_parts(
    header: Sequence[str],
    rows: Iterable[tuple[int, Sequence[str]]],
    *,
    limit: int = TABLE_PART_CHARS,
    caption: str = "",
) -> list[TablePart]:
    """Markdown tables of whole rows, each under `limit` characters where a row allows,
    each starting with the table's `caption` (if any) and `header`. `rows` are (row number,
    cells)."""
    width = len(header)
    head = ([caption] if caption else []) + _header_lines(header)
    head_chars = sum(len(line) + 1 for line in head)
    parts: list[TablePart] = []
    lines: list[str] = []
    first = last = 0
    size = head_chars
    for number, cells in rows:
        padded = list(cells[:width]) + [""] * (width - len(cells))
        line = markdown_row(padded)
        if lines and size + len(line) + 1 > limit:
            parts.append(TablePart("\n".join(head + lines), first, last))
            lines, size = [], head_chars
        if not lines:
            first = number
        lines.append(line)
        last = number
        size += len(line) + 1
    if lines:
        parts.append(TablePart("\n".join(head + lines), first, last))
    return parts


def headed_table_parts(
    rows: Sequence[Sequence[str]], name: str, caption: str = ""
) -> list[tuple[str, str]]:
    """A table whose first row is its header, as (where, text) parts of whole rows, located
    by their rows: ("table 2, rows 2-9", ...); the header is row 1."""
    header, body = rows[0], rows[1:]
    parts = table_parts(header, enumerate(body, start=2), caption=caption)
    return [(f"{name}, {rows_label(part.first_row, part.last_row)}", part.text) for part in parts]


@dataclass
class SectionWriter:
    """Collects a document's text into parts that know their heading path."""

    parts: list[PageText] = field(default_factory=list)
    _path: list[tuple[int, str]] = field(default_factory=list)
    _lines: list[str] = field(default_factory=list)
    _has_body: bool = False  # text under the headings gathered so far

    @property
    def location(self) -> str | None:
        if not self._path:
            return None
        return short(SEPARATOR.join(title for _, title in self._path), LOCATION_CHARS)

    def heading(self, level: int, title: str) -> None:
        title = short(title, HEADING_CHARS)
        if not title:
            return
        self.flush()
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, title))
        self._lines.append(f"{'#' * min(level, 6)} {title}")

    def text(self, line: str) -> None:
        if line.strip():
            self._lines.append(line.rstrip())
            self._has_body = True

    def table(self, rows: Sequence[Sequence[str]], *, name: str = "table") -> None:
        """A table whose first row is its header, as parts located by their rows."""
        if len(rows) > MAX_TABLE_ROWS:
            raise ExtractionError(
                f"A table has more than {MAX_TABLE_ROWS:,} rows; split it or upload the part "
                "that matters"
            )
        rows = [row[:MAX_COLUMNS] for row in rows if any(cell.strip() for cell in row)]
        if not rows:
            return
        if len(rows) == 1:
            self.text(markdown_row(rows[0]))
            return
        self.flush()
        for where, text in headed_table_parts(rows, name):
            located = f"{self.location}{SEPARATOR}{where}" if self.location else where
            location = short(located, LOCATION_CHARS)
            self.parts.append(PageText(page=None, text=text, location=location))

    def restart(self) -> None:
        """A new chapter: what came before ends, and headings start again from the top."""
        self.flush()
        self._path, self._lines, self._has_body = [], [], False

    def flush(self) -> None:
        """End the current section. Headings with nothing under them yet stay for the next."""
        if not self._has_body:
            return
        self._emit()

    def finish(self) -> list[PageText]:
        """The document's parts: headings with nothing under them at its end are its text too
        (a note that is only a title is not empty)."""
        if self._lines:
            self._emit()
        return self.parts

    def _emit(self) -> None:
        text = "\n\n".join(self._lines).strip()
        self._lines, self._has_body = [], False
        self.parts.append(PageText(page=None, text=text, location=self.location))


def rows_with_content(rows: Iterable[Sequence[str]], where: str) -> Iterator[tuple[int, list[str]]]:
    """(row number, cells) of the rows that hold something, within the caps on rows and
    columns; a long run of empty rows ends the table."""
    empty_run = 0
    for number, row in enumerate(rows, start=1):
        if number > MAX_TABLE_ROWS:
            raise ExtractionError(
                f"{where} has more than {MAX_TABLE_ROWS:,} rows; split it or upload the part "
                "that matters"
            )
        cells = [str(cell) for cell in row[:MAX_COLUMNS]]
        if not any(cell.strip() for cell in cells):
            empty_run += 1
            if empty_run >= EMPTY_ROWS_TO_END:
                return
            continue
        empty_run = 0
        yield number, cells


def _used_width(rows: Sequence[tuple[int, list[str]]]) -> int:
    return 1 + max(
        (index for _, cells in rows for index, cell in enumerate(cells) if cell.strip()),
        default=0,
    )


def tabular_parts(rows: Iterable[tuple[int, list[str]]], name: str) -> list[PageText]:
    """A sheet's (or CSV file's) rows as Markdown tables under its first row, each part
    located by its row numbers: "Budget, rows 2-31" (or "rows 2-31" without a name)."""
    listed = list(rows)
    if not listed:
        return []
    width = _used_width(listed)
    header = listed[0][1][:width]
    body = [(number, cells[:width]) for number, cells in listed[1:]]
    prefix = f"{name}, " if name else ""
    if not body:
        return [PageText(page=None, text=markdown_row(header), location=name or None)]
    return [
        PageText(
            page=None,
            text=part.text,
            location=prefix + rows_label(part.first_row, part.last_row),
        )
        for part in table_parts(header, body)
    ]
