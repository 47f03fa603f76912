"""The kinds of file docchat reads, and what tells each apart: the one table a new format is
added to (with its reader in `extraction.formats`). Uploads are typed from it
(`documents.filetypes`), and the web app learns what it may offer from it (`GET
/api/v1/documents/formats`). Light on purpose: no reader library is imported here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FileKind(StrEnum):
    pdf = "application/pdf"
    markdown = "text/markdown"
    text = "text/plain"
    csv = "text/csv"
    html = "text/html"
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    odt = "application/vnd.oasis.opendocument.text"
    epub = "application/epub+zip"
    png = "image/png"
    jpeg = "image/jpeg"
    tiff = "image/tiff"

    @property
    def label(self) -> str:
        """What a person calls a file of this kind, for messages: "Excel file", "PDF"."""
        return FORMATS[self].label


@dataclass(frozen=True)
class FileFormat:
    """How a kind of file is recognised and described. Binary kinds are known by their bytes
    (`magic`, or the parts of a ZIP package); kinds of text by their name's suffix."""

    kind: FileKind
    label: str
    suffixes: tuple[str, ...]
    # What a document's page count counts ("page", "pages"), if the kind has parts at all.
    parts: tuple[str, str] | None = None
    magic: tuple[bytes, ...] = ()
    # A ZIP package with this part (Office Open XML's main part, ECMA-376).
    zip_part: str | None = None
    # A ZIP package whose first entry, `mimetype`, names the kind (OpenDocument, EPUB).
    names_itself: bool = False
    text: bool = False
    # Its reader, "module:function" (loaded by `extraction.formats` when a file is read, so
    # that naming it costs nothing here); None for PDFs and images, read with OCR as needed.
    reader: str | None = None
    # Its reader writes Markdown (`#` headings, `| --- |` tables, `- ` lists, via
    # `extraction.structure`): the web app's viewer renders its text instead of showing it.
    markdown: bool = False


_ALL = (
    FileFormat(FileKind.pdf, "PDF", (".pdf",), ("page", "pages"), magic=(b"%PDF-",)),
    FileFormat(
        FileKind.docx,
        "Word file",
        (".docx",),
        zip_part="word/document.xml",
        reader="docchat.extraction.office:extract_docx",
        markdown=True,
    ),
    FileFormat(
        FileKind.pptx,
        "PowerPoint file",
        (".pptx",),
        ("slide", "slides"),
        zip_part="ppt/presentation.xml",
        reader="docchat.extraction.office:extract_pptx",
        markdown=True,
    ),
    FileFormat(
        FileKind.xlsx,
        "Excel file",
        (".xlsx",),
        ("sheet", "sheets"),
        zip_part="xl/workbook.xml",
        reader="docchat.extraction.office:extract_xlsx",
        markdown=True,
    ),
    FileFormat(
        FileKind.odt,
        "OpenDocument file",
        (".odt",),
        names_itself=True,
        reader="docchat.extraction.office:extract_odt",
        markdown=True,
    ),
    FileFormat(
        FileKind.epub,
        "EPUB file",
        (".epub",),
        names_itself=True,
        reader="docchat.extraction.markup:extract_epub",
        markdown=True,
    ),
    FileFormat(
        FileKind.csv,
        "CSV file",
        (".csv", ".tsv"),
        text=True,
        reader="docchat.extraction.office:extract_csv",
        markdown=True,
    ),
    FileFormat(
        FileKind.html,
        "HTML file",
        (".html", ".htm", ".xhtml"),
        text=True,
        reader="docchat.extraction.markup:extract_html",
        markdown=True,
    ),
    FileFormat(
        FileKind.markdown,
        "Markdown file",
        (".md", ".markdown", ".mdown"),
        text=True,
        reader="docchat.extraction.markup:extract_markdown",
        markdown=True,
    ),
    FileFormat(
        FileKind.text,
        "text file",
        (".txt", ".text", ""),
        text=True,
        reader="docchat.extraction.reader:extract_text_file",
    ),
    FileFormat(FileKind.png, "image", (".png",), magic=(b"\x89PNG\r\n\x1a\n",)),
    FileFormat(FileKind.jpeg, "image", (".jpg", ".jpeg"), magic=(b"\xff\xd8\xff",)),
    FileFormat(
        FileKind.tiff, "image", (".tif", ".tiff"), ("page", "pages"), magic=(b"II*\x00", b"MM\x00*")
    ),
)
FORMATS: dict[FileKind, FileFormat] = {entry.kind: entry for entry in _ALL}


def writes_markdown(content_type: str) -> bool:
    """Whether the text read from a document of this MIME type is Markdown."""
    return any(entry.markdown for entry in _ALL if entry.kind == content_type)
