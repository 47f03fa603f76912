"""Word, PowerPoint and Excel files (Office Open XML), read with python-docx, python-pptx and
openpyxl, and OpenDocument text (`content.xml`, with the standard library): text in reading
order, tables as Markdown, and where each part is. (CSV files are
read here too: a sheet without the workbook.)

These files are ZIP archives, so before any library opens one its declared sizes are checked:
a file that would unpack to more than `MAX_UNPACKED_BYTES`, or an entry that expands more than
`MAX_RATIO` times, is refused as a likely zip bomb. (Python's zip reader never returns more
than an entry declares, so the declared sizes bound the work.) Spreadsheets are read in
streaming mode with caps on rows and on runs of empty rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from xml.etree import ElementTree

import docx
import openpyxl
import pptx
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_xml
from docx.table import Table
from pptx.shapes.group import GroupShape

from docchat.extraction.dates import first_date, iso_date
from docchat.extraction.reader import (
    ExtractedDocument,
    ExtractionError,
    PageText,
    decode_text,
    unreadable,
)
from docchat.extraction.structure import (
    MAX_COLUMNS,
    MAX_TABLE_ROWS,
    SectionWriter,
    rows_with_content,
    short,
    table_parts,
    tabular_parts,
)

T = TypeVar("T")
MAX_UNPACKED_BYTES = 300 * 1024 * 1024
MAX_RATIO = 200
# Entries smaller than this may compress as well as they like (XML of empty cells does).
RATIO_FROM_BYTES = 10 * 1024 * 1024
HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título|titolo)\s*(\d)$", re.IGNORECASE)


def check_archive(path: Path) -> None:
    """Refuse a ZIP that would unpack to far more than any real document does."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise unreadable("file", exc) from exc
    total = sum(entry.file_size for entry in entries)
    if total > MAX_UNPACKED_BYTES:
        raise ExtractionError(
            f"The file would unpack to {total // (1024 * 1024):,} MB (the limit is "
            f"{MAX_UNPACKED_BYTES // (1024 * 1024)} MB); it looks like a zip bomb"
        )
    for entry in entries:
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > RATIO_FROM_BYTES and ratio > MAX_RATIO:
            raise ExtractionError(
                f"A part of the file expands {ratio:,.0f} times; it looks like a zip bomb"
            )


# The package's properties (ECMA-376 part 2, 11): when it was last saved, and made.
CORE_PROPERTIES = "docProps/core.xml"
DCTERMS = "{http://purl.org/dc/terms/}"
# Property files are a few hundred bytes; one far larger is not read for a date.
MAX_PROPERTIES_BYTES = 1024 * 1024


def _package_part(path: Path, name: str) -> ElementTree.Element | None:
    """A small XML part of a checked ZIP package, parsed safely; None when it is missing,
    too large or not XML (a date is never worth refusing a file for)."""
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.getinfo(name).file_size > MAX_PROPERTIES_BYTES:
                return None
            root: ElementTree.Element = safe_xml(archive.read(name))
            return root
    except (KeyError, zipfile.BadZipFile, OSError, ElementTree.ParseError, DefusedXmlException):
        return None


def _element_date(root: ElementTree.Element | None, *tags: str) -> dt.date | None:
    """The first of `tags` (in order) whose text is an ISO date."""
    if root is None:
        return None
    return first_date(iso_date(root.findtext(f".//{tag}")) for tag in tags)


def office_date(path: Path) -> dt.date | None:
    """A Word, PowerPoint or Excel file's last saved date, else its creation date."""
    core = _package_part(path, CORE_PROPERTIES)
    return _element_date(core, f"{DCTERMS}modified", f"{DCTERMS}created")


def _opened(error: Exception, what: str) -> ExtractionError:
    return unreadable(f"{what} file", error)


def _open_checked(path: Path, opener: Callable[[str], T], what: str) -> T:
    """The library's document object, once the archive's sizes have been checked."""
    check_archive(path)
    try:
        return opener(str(path))
    except Exception as exc:
        raise _opened(exc, what) from exc


# -- Word -----------------------------------------------------------------------------------


def _heading_level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    match = HEADING_STYLE.match(style_name.strip())
    return int(match.group(1)) if match else None


def _table_rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans: keep it once.
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(cell.text)
        rows.append(cells)
    return rows


def extract_docx(path: Path) -> ExtractedDocument:
    document = _open_checked(path, docx.Document, "Word")
    writer = SectionWriter()
    tables = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            tables += 1
            writer.table(_table_rows(block), name=f"table {tables}")
            continue
        style = block.style.name if block.style is not None else ""
        level = _heading_level(style or "")
        if level is not None:
            writer.heading(level, block.text)
        elif style and style.lower().startswith("list"):
            writer.text(f"- {block.text}")
        else:
            writer.text(block.text)
    return ExtractedDocument(pages=writer.finish(), page_count=1, document_date=office_date(path))


# -- PowerPoint -----------------------------------------------------------------------------


def _shape_texts(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        # (Not `shape_type`: python-pptx raises for shapes it does not recognise.)
        if isinstance(shape, GroupShape):
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            if rows:
                numbered = list(enumerate(rows[1:], start=2))
                yield "\n\n".join(part.text for part in table_parts(rows[0], numbered))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = shape.text_frame.text
            if text.strip():
                yield text


def extract_pptx(path: Path) -> ExtractedDocument:
    presentation = _open_checked(path, pptx.Presentation, "PowerPoint")
    parts: list[PageText] = []
    slides = list(presentation.slides)
    for number, slide in enumerate(slides, start=1):
        title_shape = slide.shapes.title
        title = short(title_shape.text, 80) if title_shape is not None else ""
        texts = list(_shape_texts(slide.shapes))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                texts.append(f"Notes: {notes.text}")
        text = "\n\n".join(texts).strip()
        if text:
            location = f"Slide {number}: {title}" if title else f"Slide {number}"
            parts.append(PageText(page=None, text=text, location=location))
    return ExtractedDocument(
        pages=parts, page_count=max(len(slides), 1), document_date=office_date(path)
    )


# -- Excel ----------------------------------------------------------------------------------


def _value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="minutes").removesuffix(" 00:00")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def extract_xlsx(path: Path) -> ExtractedDocument:
    check_archive(path)
    # Opened as a stream: stored files have no extension, which openpyxl checks on paths.
    stream = path.open("rb")
    try:
        workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True)
    except Exception as exc:
        stream.close()
        raise _opened(exc, "Excel") from exc
    parts: list[PageText] = []
    try:
        sheets = workbook.worksheets
        for sheet in sheets:
            if hasattr(sheet, "reset_dimensions"):
                # The declared size may say a million rows: read the rows that exist.
                sheet.reset_dimensions()
            values = sheet.iter_rows(values_only=True)
            rows = rows_with_content(([_value(v) for v in row] for row in values), sheet.title)
            parts.extend(tabular_parts(rows, short(sheet.title, 60)))
    finally:
        workbook.close()
        stream.close()
    return ExtractedDocument(
        pages=parts, page_count=max(len(sheets), 1), document_date=office_date(path)
    )


# -- CSV ------------------------------------------------------------------------------------


def extract_csv(path: Path) -> ExtractedDocument:
    text = decode_text(path.read_bytes())
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        # (Not the path's name: stored files are named by their hash, a server detail.)
        parts = tabular_parts(rows_with_content(reader, "The CSV file"), "")
    except csv.Error as exc:
        raise unreadable("CSV file", exc) from exc
    return ExtractedDocument(pages=parts, page_count=1)


# -- OpenDocument text ----------------------------------------------------------------------

ODF_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
ODF_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
ODF_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
ODF_META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
DC = "{http://purl.org/dc/elements/1.1/}"


ODF_CELLS = (f"{ODF_TABLE}table-cell", f"{ODF_TABLE}covered-table-cell")


def _count(element: ElementTree.Element, attribute: str, limit: int) -> int:
    """A repeat count the file declares (spaces, repeated cells), within 1..`limit`."""
    try:
        return max(1, min(int(element.get(attribute, "1")), limit))
    except ValueError:
        return 1


def _odf_text(element: ElementTree.Element) -> str:
    """An element's text as displayed: spans joined, `text:s` spaces, tabs and line breaks."""
    pieces = [element.text or ""]
    for child in element:
        if child.tag == f"{ODF_TEXT}s":
            pieces.append(" " * _count(child, f"{ODF_TEXT}c", 100))
        elif child.tag == f"{ODF_TEXT}tab":
            pieces.append("\t")
        elif child.tag == f"{ODF_TEXT}line-break":
            pieces.append("\n")
        elif child.tag != f"{ODF_TEXT}note":  # footnote bodies would break the sentence
            pieces.append(_odf_text(child))
        pieces.append(child.tail or "")
    return "".join(pieces)


def _odf_row_cells(row: ElementTree.Element) -> list[str]:
    """A row's cells, at most `MAX_COLUMNS`. `number-columns-repeated` may declare thousands
    of copies of a cell: copies are made only up to the column cap, and empty cells only when
    a cell with text follows them (the empty padding to a sheet's width is never built)."""
    cells: list[str] = []
    empty = 0  # empty cells seen since the last cell with text
    for cell in row:
        if cell.tag not in ODF_CELLS:
            continue
        repeat = _count(cell, f"{ODF_TABLE}number-columns-repeated", MAX_COLUMNS)
        text = " ".join(_odf_text(p) for p in cell.iter(f"{ODF_TEXT}p"))
        if not text.strip():
            empty += repeat
        else:
            cells.extend([""] * empty)
            cells.extend([text] * repeat)
            empty = 0
        if len(cells) + empty >= MAX_COLUMNS:
            break
    return cells[:MAX_COLUMNS]


def _odf_table_rows(table: ElementTree.Element) -> list[list[str]]:
    """The table's rows. A row declared repeated (`number-rows-repeated`) is read once: the
    repeats are mostly empty filler, and copies of a row add nothing to search."""
    rows: list[list[str]] = []
    for row in table.iter(f"{ODF_TABLE}table-row"):
        if len(rows) > MAX_TABLE_ROWS:  # one past the cap: the writer refuses the table
            break
        rows.append(_odf_row_cells(row))
    return rows


def _odf_blocks(parent: ElementTree.Element, writer: SectionWriter, tables: list[int]) -> None:
    for element in parent:
        tag = element.tag
        if tag == f"{ODF_TEXT}h":
            writer.heading(int(element.get(f"{ODF_TEXT}outline-level", "1")), _odf_text(element))
        elif tag == f"{ODF_TEXT}p":
            writer.text(_odf_text(element))
        elif tag == f"{ODF_TEXT}list":
            for paragraph in element.iter(f"{ODF_TEXT}p"):
                writer.text(f"- {_odf_text(paragraph)}")
        elif tag == f"{ODF_TABLE}table":
            tables.append(len(tables) + 1)
            writer.table(_odf_table_rows(element), name=f"table {tables[-1]}")
        elif tag in (f"{ODF_TEXT}section", f"{ODF_TEXT}index-body", f"{ODF_OFFICE}text"):
            _odf_blocks(element, writer, tables)


def extract_odt(path: Path) -> ExtractedDocument:
    check_archive(path)
    try:
        with zipfile.ZipFile(path) as archive:
            root = safe_xml(archive.read("content.xml"))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, DefusedXmlException) as exc:
        raise _opened(exc, "OpenDocument") from exc
    writer = SectionWriter()
    body = root.find(f"{ODF_OFFICE}body/{ODF_OFFICE}text")
    if body is not None:
        _odf_blocks(body, writer, [])
    return ExtractedDocument(pages=writer.finish(), page_count=1, document_date=odf_date(path))


def odf_date(path: Path) -> dt.date | None:
    """An OpenDocument file's last saved date (`dc:date` in `meta.xml`), else its creation."""
    meta = _package_part(path, "meta.xml")
    return _element_date(meta, f"{DC}date", f"{ODF_META}creation-date")
