"""HTML, EPUB and Markdown: text by section, each part located by its heading path.

HTML is read with the standard library's tolerant parser: scripts, styles and page chrome
(`nav`, `header`, `footer`, `aside`, forms) are left out, block elements end lines, list items
become "- " lines, and tables become Markdown tables (via `SectionWriter`). Markdown keeps its
text as written and only uses its `#` headings (outside code fences) for locations.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_xml

from docchat.extraction.dates import any_date, first_date, iso_date
from docchat.extraction.office import DC, check_archive
from docchat.extraction.reader import (
    ExtractedDocument,
    ExtractionError,
    decode_text,
    unreadable,
)
from docchat.extraction.structure import SectionWriter

SKIPPED = {
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "head",
    "nav",
    "footer",
    "aside",
    "form",
    "button",
    "select",
    "iframe",
    "object",
}
BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "br",
    "hr",
    "pre",
    "blockquote",
    "dd",
    "dt",
    "figcaption",
    "address",
    "li",
    "tr",
    "ul",
    "ol",
    "dl",
    "header",
}
HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Elements that never have an end tag: they must not open a skipped region.
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}
# Regions a reader never sees as content, whatever their tag.
HIDDEN_ROLES = {"navigation", "dialog", "banner", "contentinfo", "search", "menu", "toolbar"}
# `<meta>` dates (by their `name`, `property` or `http-equiv`), last changed first, then
# published: Open Graph's article times, Dublin Core's, and the plain ones pages carry.
META_DATES = (
    "article:modified_time",
    "og:updated_time",
    "dcterms.modified",
    "last-modified",
    "article:published_time",
    "dcterms.date",
    "dc.date",
    "date",
)
MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


class _HtmlSections(HTMLParser):
    def __init__(self, writer: SectionWriter | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.writer = writer or SectionWriter()
        # The element being skipped (with everything in it), and how many elements of the
        # same name opened inside it since: its own end tag is the one at zero.
        self._skip: tuple[str, int] | None = None
        self._pre: list[str] | None = None
        self._line: list[str] = []
        self._heading: int | None = None
        self._heading_text: list[str] = []
        self._table: list[list[str]] | None = None
        self._tables = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.title = ""
        self._in_title = False
        # The page's `<meta>` dates by their name (`META_DATES`).
        self.meta_dates: dict[str, str] = {}

    # -- text -------------------------------------------------------------------------------
    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip is not None:
            return
        if self._pre is not None:
            self._pre.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._heading is not None:
            self._heading_text.append(data)
        else:
            self._line.append(data)

    def _end_line(self) -> None:
        line = " ".join("".join(self._line).split())
        self._line = []
        if line:
            self.writer.text(line)

    # -- tags -------------------------------------------------------------------------------
    @staticmethod
    def _hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag in SKIPPED:
            return True
        values = dict(attrs)
        return (
            "hidden" in values
            or values.get("aria-hidden") == "true"
            or (values.get("role") or "") in HIDDEN_ROLES
        )

    def _meta(self, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        key = values.get("name") or values.get("property") or values.get("http-equiv") or ""
        key = key.strip().lower()
        content = values.get("content")
        if key in META_DATES and content and key not in self.meta_dates:
            self.meta_dates[key] = content

    def document_date(self) -> dt.date | None:
        """The page's own date from its `<meta>` tags, as `META_DATES` prefers them."""
        return first_date(any_date(self.meta_dates.get(key)) for key in META_DATES)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag == "meta":  # in the `head`, which is otherwise skipped
            self._meta(attrs)
        if self._skip is not None:
            name, nested = self._skip
            if tag == name:
                self._skip = (name, nested + 1)
            return
        if tag not in VOID and self._hidden(tag, attrs):
            self._skip = (tag, 0)
            return
        if tag in HEADINGS and self._table is None:
            self._end_line()
            self._heading, self._heading_text = HEADINGS[tag], []
        elif tag == "pre" and self._table is None:
            self._end_line()
            self._pre = []
        elif tag == "table":
            self._end_line()
            self._table = [] if self._table is None else self._table
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in {"td", "th"} and self._row is not None:
            self._cell = []
        elif tag in BLOCKS:
            self._end_line()
            if tag == "li":
                self._line.append("- ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            self._meta(attrs)
        if tag == "br" and self._skip is None and self._pre is None:
            if self._cell is not None:
                self._cell.append(" ")
            else:
                self._end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skip is not None:
            name, nested = self._skip
            if tag == name:
                self._skip = (name, nested - 1) if nested else None
            return
        if tag == "pre" and self._pre is not None:
            self.writer.text("".join(self._pre).strip("\n"))
            self._pre = None
            return
        if tag in HEADINGS and self._heading is not None:
            self.writer.heading(self._heading, " ".join("".join(self._heading_text).split()))
            self._heading = None
        elif tag in {"td", "th"} and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table" and self._table is not None:
            self._tables += 1
            self.writer.table(self._table, name=f"table {self._tables}")
            self._table = self._row = self._cell = None
        elif tag in BLOCKS:
            self._end_line()

    def finish(self) -> SectionWriter:
        self.close()
        self._end_line()
        self.writer.finish()
        return self.writer


def extract_html(path: Path) -> ExtractedDocument:
    parser = _HtmlSections()
    parser.feed(decode_text(path.read_bytes()))
    writer = parser.finish()
    return ExtractedDocument(pages=writer.parts, page_count=1, document_date=parser.document_date())


def extract_markdown(path: Path) -> ExtractedDocument:
    writer = SectionWriter()
    in_code = False
    paragraph: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            writer.text("\n".join(paragraph))
            paragraph.clear()

    for line in decode_text(path.read_bytes()).splitlines():
        if FENCE.match(line):
            in_code = not in_code
        heading = None if in_code else MARKDOWN_HEADING.match(line)
        if heading:
            end_paragraph()
            writer.heading(len(heading.group(1)), heading.group(2))
        elif not line.strip() and not in_code:
            end_paragraph()
        else:
            paragraph.append(line)
    end_paragraph()
    return ExtractedDocument(pages=writer.finish(), page_count=1)


# -- EPUB ----------------------------------------------------------------------------------

CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
OPF = "{http://www.idpf.org/2007/opf}"
MAX_CHAPTERS = 2_000


def _package(archive: zipfile.ZipFile) -> tuple[list[str], dt.date | None]:
    """The book's XHTML files in reading order (the package's spine), and its date."""
    container = safe_xml(archive.read("META-INF/container.xml"))
    rootfile = container.find(f".//{CONTAINER}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise ExtractionError("The EPUB names no package file; it looks damaged")
    package_path = str(rootfile.get("full-path"))
    package = safe_xml(archive.read(package_path))
    manifest = {
        item.get("id"): item.get("href") for item in package.iter(f"{OPF}item") if item.get("id")
    }
    base = posixpath.dirname(package_path)
    chapters = []
    for reference in package.iter(f"{OPF}itemref"):
        href = manifest.get(reference.get("idref"))
        if href:
            chapters.append(posixpath.normpath(posixpath.join(base, unquote(href))))
    if len(chapters) > MAX_CHAPTERS:
        raise ExtractionError(
            f"The EPUB has {len(chapters):,} chapters; the limit is {MAX_CHAPTERS:,}"
        )
    return chapters, _book_date(package)


def _book_date(package: ElementTree.Element) -> dt.date | None:
    """The book's date: its publication date (`dc:date`; in EPUB 2, the one whose event is
    not creation or modification first), else when the publication was last modified
    (EPUB 3's `dcterms:modified`, which dates the package rather than the book)."""
    metadata = package.find(f"{OPF}metadata")
    if metadata is None:
        return None
    dates = metadata.findall(f"{DC}date")
    events = [date.get(f"{OPF}event", date.get("event", "")).lower() for date in dates]
    published = [d.text for d, e in zip(dates, events, strict=True) if e in ("", "publication")]
    others = [d.text for d, e in zip(dates, events, strict=True) if e not in ("", "publication")]
    modified = [
        meta.text
        for meta in metadata.iter(f"{OPF}meta")
        if meta.get("property") == "dcterms:modified"
    ]
    return first_date(iso_date(text) for text in [*published, *modified, *others])


def extract_epub(path: Path) -> ExtractedDocument:
    """Chapter by chapter in reading order; each chapter starts its own heading path."""
    check_archive(path)
    writer = SectionWriter()
    try:
        with zipfile.ZipFile(path) as archive:
            chapters, date = _package(archive)
            for name in chapters:
                writer.restart()
                parser = _HtmlSections(writer)
                parser.feed(archive.read(name).decode("utf-8", "replace"))
                parser.finish()
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, DefusedXmlException) as exc:
        raise unreadable("EPUB file", exc) from exc
    return ExtractedDocument(
        pages=writer.parts, page_count=max(len(chapters), 1), document_date=date
    )
