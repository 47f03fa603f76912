"""Text out of any file docchat takes: each kind to its reader, with the same refusals.

Blocking CPU work: the sandbox runs it in a child process with time and memory limits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pypdf import PageObject

from docchat.extraction.kinds import FileKind
from docchat.extraction.markup import extract_epub, extract_html, extract_markdown
from docchat.extraction.ocr import OCR_PAGE_LOCATION, OcrOptions, extract_image, pdf_page_text
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
    ScanReader,
    any_real_text,
    extract_pdf,
    extract_text_file,
    unreadable,
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
IMAGE_KINDS = frozenset({FileKind.png, FileKind.jpeg, FileKind.tiff})
NO_TEXT = "No text found in the PDF"
NO_TEXT_WITHOUT_OCR = (
    "No text found: the PDF's pages are scanned images, and OCR is not installed on this "
    "server (an administrator can install tesseract-ocr)"
)
NO_TEXT_BY_OCR = "No text found in the PDF, even by OCR of its scanned pages"


def extract(
    path: Path,
    kind: FileKind,
    *,
    page_seconds: float | None = None,
    ocr: OcrOptions | None = None,
) -> ExtractedDocument:
    """The file's text; `ocr` (None: no OCR) reads scanned PDF pages and images.
    `ExtractionError`, with a message for the file's owner, when there is none to have."""
    try:
        if kind is FileKind.pdf:
            return _extract_pdf(path, page_seconds, ocr)
        if kind in IMAGE_KINDS:
            return extract_image(path, ocr)
        document = READERS[kind](path)
    except (ExtractionError, MemoryError):
        raise
    except Exception as exc:  # a reader library's own error, in its own words
        raise unreadable(kind.label, exc) from exc
    if not document.has_text:
        raise ExtractionError("The file contains no text")
    return document


def _extract_pdf(
    path: Path, page_seconds: float | None, ocr: OcrOptions | None
) -> ExtractedDocument:
    document = extract_pdf(
        path,
        page_seconds=page_seconds,
        read_scan=_scan_reader(ocr) if ocr is not None else None,
        scan_location=OCR_PAGE_LOCATION,
    )
    if any_real_text(document) or (document.has_text and not document.scanned_pages):
        return document
    if not document.scanned_pages:
        raise ExtractionError(NO_TEXT)
    raise ExtractionError(NO_TEXT_BY_OCR if ocr is not None else NO_TEXT_WITHOUT_OCR)


def _scan_reader(ocr: OcrOptions) -> ScanReader:
    """OCR for a PDF's scanned pages, refusing the document past `ocr.max_pages` of them."""
    read = 0

    def read_scan(page: PageObject) -> str:
        nonlocal read
        read += 1
        if read > ocr.max_pages:
            raise ExtractionError(
                f"The PDF has more than {ocr.max_pages} scanned pages; OCR reads at most "
                f"{ocr.max_pages} per document (OCR_MAX_PAGES)"
            )
        return pdf_page_text(page, ocr)

    return read_scan
