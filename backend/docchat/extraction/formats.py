"""Text out of any file docchat takes: each kind to its reader, with the same refusals.

Blocking CPU work: the sandbox runs it in a child process with time and memory limits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from docchat.extraction.kinds import FileKind
from docchat.extraction.markup import extract_epub, extract_html, extract_markdown
from docchat.extraction.office import (
    extract_csv,
    extract_docx,
    extract_odt,
    extract_pptx,
    extract_xlsx,
)
from docchat.extraction.reader import (
    ExtractedDocument,
    ExtractionError,
    any_real_text,
    extract_pdf,
    extract_text_file,
)

READERS: dict[FileKind, Callable[[Path], ExtractedDocument]] = {
    FileKind.text: extract_text_file,
    FileKind.markdown: extract_markdown,
    FileKind.html: extract_html,
    FileKind.csv: extract_csv,
    FileKind.docx: extract_docx,
    FileKind.pptx: extract_pptx,
    FileKind.xlsx: extract_xlsx,
    FileKind.odt: extract_odt,
    FileKind.epub: extract_epub,
}
NO_TEXT = "No text found; scanned PDFs need OCR before upload"


def extract(path: Path, kind: FileKind, *, page_seconds: float | None = None) -> ExtractedDocument:
    if kind is FileKind.pdf:
        document = extract_pdf(path, page_seconds=page_seconds)
        if not document.has_text or (document.scanned_pages and not any_real_text(document)):
            raise ExtractionError(NO_TEXT)
        return document
    document = READERS[kind](path)
    if not document.has_text:
        raise ExtractionError("The file contains no text")
    return document
