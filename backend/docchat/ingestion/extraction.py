"""Text out of files, page by page. Blocking CPU work: call it from a worker thread."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pypdf import PageObject, PdfReader
from pypdf.errors import LimitReachedError, PyPdfError

from docchat.documents.filetypes import FileKind

logger = logging.getLogger(__name__)
MAX_PDF_PAGES = 5000
# A page with fewer letters and digits than this carries no real text (stray labels, page numbers).
MIN_PAGE_TEXT_CHARS = 20


class ExtractionError(Exception):
    """The file cannot give text; the message is shown to the user as the document's error."""


@dataclass(frozen=True)
class PageText:
    page: int | None  # 1-based for PDFs; None for text files
    text: str


@dataclass(frozen=True)
class ExtractedDocument:
    pages: list[PageText]
    page_count: int
    scanned_pages: int = 0  # pages that are images with (almost) no text

    @property
    def has_text(self) -> bool:
        return any(page.text.strip() for page in self.pages)


def _open_pdf(path: Path) -> PdfReader:
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted:
            # Many "encrypted" PDFs only restrict printing and open with an empty password.
            try:
                opened = bool(reader.decrypt(""))
            except Exception:
                opened = False
            if not opened:
                raise ExtractionError(
                    "The PDF is password-protected; upload a copy without a password"
                )
        return reader
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise ExtractionError(f"The PDF could not be read; it looks damaged ({exc})") from exc


def extract_pdf(path: Path) -> ExtractedDocument:
    reader = _open_pdf(path)
    try:
        page_count = len(reader.pages)
    except LimitReachedError as exc:
        raise ExtractionError(
            f"The PDF is built to exhaust a reader and was refused ({exc})"
        ) from exc
    except (PyPdfError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ExtractionError(f"The PDF could not be read; it looks damaged ({exc})") from exc
    if page_count == 0:
        raise ExtractionError("The PDF has no pages")
    if page_count > MAX_PDF_PAGES:
        raise ExtractionError(f"The PDF has {page_count} pages; the limit is {MAX_PDF_PAGES}")
    pages: list[PageText] = []
    scanned = 0
    for number in range(page_count):
        page = reader.pages[number]
        try:
            text = page.extract_text() or ""
        except RecursionError as exc:
            raise ExtractionError(f"Page {number + 1} is nested too deeply to read") from exc
        except Exception as exc:
            # One unreadable page should not sink the rest of the document.
            logger.warning("page %d of %s could not be read: %s", number + 1, path.name, exc)
            text = ""
        if not _has_real_text(text) and _has_images(page):
            scanned += 1
        pages.append(PageText(page=number + 1, text=text.replace("\x00", "")))
    return ExtractedDocument(pages=pages, page_count=page_count, scanned_pages=scanned)


def _has_real_text(text: str) -> bool:
    return sum(ch.isalnum() for ch in text) >= MIN_PAGE_TEXT_CHARS


def _has_images(page: PageObject) -> bool:
    try:
        return len(page.images) > 0
    except Exception:
        return False


def extract_text_file(path: Path) -> ExtractedDocument:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            f"The file is not valid UTF-8 text (undecodable byte at position {exc.start}); "
            "save it as UTF-8 and upload it again"
        ) from exc
    return ExtractedDocument(
        pages=[PageText(page=None, text=text.replace("\x00", ""))], page_count=1
    )


def _any_real_text(document: ExtractedDocument) -> bool:
    return any(_has_real_text(page.text) for page in document.pages)


def extract(path: Path, kind: FileKind) -> ExtractedDocument:
    document = extract_pdf(path) if kind is FileKind.pdf else extract_text_file(path)
    if kind is FileKind.pdf and document.scanned_pages and not _any_real_text(document):
        raise ExtractionError("No text found; scanned PDFs need OCR before upload")
    if not document.has_text:
        if kind is FileKind.pdf:
            raise ExtractionError("No text found; scanned PDFs need OCR before upload")
        raise ExtractionError("The file contains no text")
    return document
