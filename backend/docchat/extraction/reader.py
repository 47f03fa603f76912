"""Text out of PDFs (page by page) and plain text files; `formats.extract` picks the reader.

A PDF page that cannot be read (a parser error, pypdf's token limit, or more than
`page_seconds` of work) is skipped; a document where such pages pile up (at least
`FAILED_PAGES_TO_GIVE_UP`, and at least a tenth of its pages) is refused with the reason,
instead of keeping a worker busy for hours on a file built to exhaust it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pypdf import PageObject, PdfReader
from pypdf.errors import LimitReachedError, PyPdfError

from docchat.extraction.dates import first_date, pdf_date

logger = logging.getLogger(__name__)
MAX_PDF_PAGES = 5000
# A page with fewer letters and digits than this carries no real text (stray labels, page numbers).
MIN_PAGE_TEXT_CHARS = 20
FAILED_PAGES_TO_GIVE_UP = 3
FAILED_SHARE_TO_GIVE_UP = 0.1


class ExtractionError(Exception):
    """The file cannot give text; the message is shown to the user as the document's error."""


def unreadable(what: str, error: BaseException) -> ExtractionError:
    """The error a user sees when a reader library fails on a file: the kind of file and that
    it looks damaged, never the library's own words, which can name server paths and library
    internals. Those go to the server's log."""
    logger.warning("the %s reader failed: %s: %s", what, type(error).__name__, error)
    return ExtractionError(f"The {what} could not be read; it looks damaged")


class PageTimeout(Exception):
    """One page took longer than its time limit."""


@dataclass(frozen=True)
class PageText:
    page: int | None  # 1-based for PDFs; None for text files
    text: str
    # Where the text is, for formats without pages: "Slide 3", "Sheet1, rows 2-40",
    # "3 Installation > 3.2 Proxy". Shown with citations as `page` is for PDFs.
    location: str | None = None


@dataclass(frozen=True)
class ExtractedDocument:
    pages: list[PageText]
    page_count: int
    scanned_pages: int = 0  # pages that are images with (almost) no text
    ocr_pages: int = 0  # pages whose text was read by OCR
    # The document's own date where the file carries one (`extraction.dates`): when it was
    # last changed, else made (a book's: when it was published).
    document_date: dt.date | None = None

    @property
    def has_text(self) -> bool:
        return any(page.text.strip() for page in self.pages)


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise `PageTimeout` in the block after `seconds` (main thread only: a timer signal)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise PageTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
        raise unreadable("PDF", exc) from exc


def _page_count(reader: PdfReader) -> int:
    try:
        page_count = len(reader.pages)
    except LimitReachedError as exc:
        logger.warning("the PDF reader refused the page tree: %s", exc)
        raise ExtractionError("The PDF is built to exhaust a reader and was refused") from exc
    except (PyPdfError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise unreadable("PDF", exc) from exc
    if page_count == 0:
        raise ExtractionError("The PDF has no pages")
    if page_count > MAX_PDF_PAGES:
        raise ExtractionError(f"The PDF has {page_count} pages; the limit is {MAX_PDF_PAGES}")
    return page_count


@dataclass
class _PageFailures:
    failed: list[tuple[int, str]]

    def add(self, number: int, reason: str) -> None:
        self.failed.append((number, reason))
        if self._too_many():
            raise ExtractionError(self._describe())

    def _too_many(self) -> bool:
        """Enough failures, and a tenth of the pages read so far: a file of bad pages stops
        at its third, a long file with a few broken pages is still read."""
        count, seen = len(self.failed), self.failed[-1][0]
        return count >= FAILED_PAGES_TO_GIVE_UP and count >= FAILED_SHARE_TO_GIVE_UP * seen

    def _describe(self) -> str:
        numbers = ", ".join(str(number) for number, _ in self.failed[:5])
        reasons = sorted({reason for _, reason in self.failed})
        return (
            f"{len(self.failed)} pages could not be read (pages {numbers}): "
            f"{'; '.join(reasons)}. The PDF may be damaged or built to exhaust readers"
        )


def _page_text(page: PageObject, number: int, page_seconds: float | None) -> str:
    """The page's text; `_PageError` (with a reason a user can read) when it cannot be had."""
    try:
        with _time_limit(page_seconds):
            return page.extract_text() or ""
    except RecursionError as exc:
        raise ExtractionError(f"Page {number} is nested too deeply to read") from exc
    except PageTimeout:
        raise _PageError(f"a page took more than {page_seconds:g} s") from None
    except LimitReachedError as exc:
        raise _PageError("a page exceeded the reader's limits") from exc
    except MemoryError:
        raise
    except Exception as exc:
        raise _PageError("a page could not be parsed") from exc


class _PageError(Exception):
    pass


# Reads an image-only page by OCR; the location its text is marked with.
ScanReader = Callable[[PageObject], str]
# Reads a page's tables (`pdf_tables`): its parts, or None when it holds none (page number
# 1-based).
TableReader = Callable[[PageObject, int], "list[PageText] | None"]
# Reads the pictures drawn on a page of text (`pdf_pictures`): a part per picture with text.
PictureReader = Callable[[PageObject, int], "list[PageText]"]


def extract_pdf(
    path: Path,
    *,
    page_seconds: float | None = None,
    read_scan: ScanReader | None = None,
    scan_location: str | None = None,
    read_tables: TableReader | None = None,
    read_pictures: PictureReader | None = None,
) -> ExtractedDocument:
    """The PDF's text page by page; pages that are pictures with no text are read by
    `read_scan` (OCR) when given, and their text marked with `scan_location`; a page with
    tables, by `read_tables` when given (its tables as parts of their own); the pictures on a
    page of text, by `read_pictures` when given (after the page's text)."""
    reader = _open_pdf(path)
    page_count = _page_count(reader)
    failures = _PageFailures([])
    pages: list[PageText] = []
    scanned = recognized = 0
    for number in range(1, page_count + 1):
        page = reader.pages[number - 1]
        try:
            text = _page_text(page, number, page_seconds)
        except _PageError as exc:
            logger.warning(
                "page %d of %s could not be read: %s (%r)", number, path.name, exc, exc.__cause__
            )
            failures.add(number, str(exc))
            pages.append(PageText(page=number, text=""))
            continue
        if not _has_real_text(text) and _has_images(page, page_seconds):
            scanned += 1
            scan_text = read_scan(page) if read_scan is not None else ""
            if _has_real_text(scan_text):
                recognized += 1
                pages.append(PageText(page=number, text=scan_text, location=scan_location))
                continue
        tables = _page_tables(read_tables, page, number, page_seconds) if read_tables else None
        pages.extend(tables or [PageText(page=number, text=text.replace("\x00", ""))])
        if read_pictures is not None:
            pages.extend(_page_pictures(read_pictures, page, number))
    return ExtractedDocument(
        pages=pages,
        page_count=page_count,
        scanned_pages=scanned,
        ocr_pages=recognized,
        document_date=_pdf_document_date(reader, page_seconds),
    )


def _page_pictures(read_pictures: PictureReader, page: PageObject, number: int) -> list[PageText]:
    """The text of the page's pictures; none when reading them fails (the page's text stands;
    OCR bounds each picture's time itself)."""
    try:
        parts = read_pictures(page, number)
    except MemoryError:
        raise
    except Exception as exc:
        logger.warning(
            "the pictures of page %d could not be read: %s: %s", number, type(exc).__name__, exc
        )
        return []
    return [dataclasses.replace(part, text=part.text.replace("\x00", "")) for part in parts]


def _page_tables(
    read_tables: TableReader, page: PageObject, number: int, page_seconds: float | None
) -> list[PageText] | None:
    """The page's parts with its tables; None (its plain text stands) when it has none, or
    when reading them fails or takes longer than a page may."""
    try:
        with _time_limit(page_seconds):
            parts = read_tables(page, number)
    except MemoryError:
        raise
    except (Exception, PageTimeout) as exc:
        logger.warning(
            "the tables of page %d could not be read: %s: %s", number, type(exc).__name__, exc
        )
        return None
    if parts is None:
        return None
    return [dataclasses.replace(part, text=part.text.replace("\x00", "")) for part in parts]


def _pdf_string(value: object) -> str | None:
    """A metadata value as text (an indirect object resolved, a byte string decoded)."""
    resolve = getattr(value, "get_object", None)
    if callable(resolve):
        value = resolve()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _pdf_document_date(reader: PdfReader, seconds: float | None) -> dt.date | None:
    """The PDF's modification date, else its creation date (its information dictionary),
    read from the raw strings: pypdf's own parsing raises on the malformed ones files hold.
    A metadata dictionary that cannot be read (in a page's time) is no date."""
    try:
        with _time_limit(seconds):
            metadata = reader.metadata
            if metadata is None:
                return None
            keys = ("/ModDate", "/CreationDate")
            return first_date(pdf_date(_pdf_string(metadata.get(key))) for key in keys)
    except MemoryError:
        raise
    except Exception as exc:  # a broken trailer or a hostile object: the text still counts
        logger.info("the PDF's dates could not be read: %s: %s", type(exc).__name__, exc)
        return None


def _has_real_text(text: str) -> bool:
    return sum(ch.isalnum() for ch in text) >= MIN_PAGE_TEXT_CHARS


def _has_images(page: PageObject, page_seconds: float | None) -> bool:
    try:
        with _time_limit(page_seconds):
            return len(page.images) > 0
    except (Exception, PageTimeout):
        return False


def decode_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig").replace("\x00", "")
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            f"The file is not valid UTF-8 text (undecodable byte at position {exc.start}); "
            "save it as UTF-8 and upload it again"
        ) from exc


def extract_text_file(path: Path) -> ExtractedDocument:
    text = decode_text(path.read_bytes())
    return ExtractedDocument(pages=[PageText(page=None, text=text)], page_count=1)


def any_real_text(document: ExtractedDocument) -> bool:
    return any(_has_real_text(page.text) for page in document.pages)
