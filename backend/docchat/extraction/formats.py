"""Text out of any file docchat takes: each kind to its reader, with the same refusals.

Blocking CPU work: the sandbox runs it in a child process with time and memory limits.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from collections.abc import Callable
from pathlib import Path

from pypdf import PageObject

from docchat.extraction.kinds import FORMATS, FileKind
from docchat.extraction.ocr import OCR_PAGE_LOCATION, OcrOptions, extract_image, pdf_page_text
from docchat.extraction.pdf_pictures import PdfPictures
from docchat.extraction.pdf_tables import PdfTables
from docchat.extraction.pictures import PICTURES, picture_parts
from docchat.extraction.reader import (
    ExtractedDocument,
    ExtractionError,
    ScanReader,
    any_real_text,
    extract_pdf,
    unreadable,
)
from docchat.extraction.running_lines import without_running_lines

logger = logging.getLogger(__name__)

Reader = Callable[[Path], ExtractedDocument]


def _load(reference: str) -> Reader:
    module, name = reference.split(":")
    reader: Reader = getattr(importlib.import_module(module), name)
    return reader


# Each kind's reader, as the format table names it (a new format is an entry there and its
# reader module: nothing to add here).
READERS: dict[FileKind, Reader] = {
    kind: _load(entry.reader) for kind, entry in FORMATS.items() if entry.reader is not None
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
        if ocr is not None and kind in PICTURES:
            document = _with_pictures(document, path, kind, ocr)
    except (ExtractionError, MemoryError):
        raise
    except Exception as exc:  # a reader library's own error, in its own words
        raise unreadable(kind.label, exc) from exc
    if not document.has_text:
        raise ExtractionError("The file contains no text")
    return document


def _with_pictures(
    document: ExtractedDocument, path: Path, kind: FileKind, ocr: OcrOptions
) -> ExtractedDocument:
    """The document with the text OCR reads in its pictures, after its own; its own alone
    when they cannot be read (a damaged picture file inside the package)."""
    try:
        read = picture_parts(path, kind, ocr)
    except (MemoryError, ExtractionError):
        raise
    except Exception as exc:
        logger.warning(
            "the pictures of %s could not be read: %s: %s", path.name, type(exc).__name__, exc
        )
        return document
    if not read:
        return document
    return dataclasses.replace(
        document, pages=[*document.pages, *read], ocr_pages=document.ocr_pages + len(read)
    )


def _extract_pdf(
    path: Path, page_seconds: float | None, ocr: OcrOptions | None
) -> ExtractedDocument:
    tables = PdfTables(path)
    try:
        document = extract_pdf(
            path,
            page_seconds=page_seconds,
            read_scan=_scan_reader(ocr) if ocr is not None else None,
            scan_location=OCR_PAGE_LOCATION,
            read_tables=tables.page_parts,
            read_pictures=PdfPictures(ocr).page_parts if ocr is not None else None,
        )
    finally:
        tables.close()
    document = dataclasses.replace(document, pages=without_running_lines(document.pages))
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
