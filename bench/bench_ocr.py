"""OCR speed and accuracy: scanned pages read by Tesseract, against the pages' true text.

    .venv/bin/python -m bench.bench_ocr [--runs 3]

Reads the scanned fixtures (tests/fixtures/ocr: real PDFs rendered at 200 dpi, tilted and
speckled like a photocopy) the way the worker does, one page after another on one core, and
compares the text with the original PDF's own. Also a 100 dpi copy of the one-page scan: a
cheap scan is read as well (enlarging it to 300 dpi first was tried, and lost 15 points).
Accuracy: characters of the true text read in order (spacing ignored), so a misread letter, a
lost word or a swapped column all count; pypdf orders the one-page original's small table
differently from how it reads on the page, which costs that page a few points.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from PIL import Image
from pypdf import PdfReader
from tests.support.text_accuracy import character_accuracy

from bench.common import machine, median, table
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import OcrOptions, find_tesseract

SCANS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ocr"


def truth_of(original: str) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(SCANS / original).pages)


def low_resolution_copy(folder: Path) -> Path:
    """The one-page scan at 100 dpi (a cheap fax or phone scan), as an image-only PDF."""
    scan = Image.open(SCANS / "google-doc-document-scanned.jpg")
    small = scan.resize((scan.width // 2, scan.height // 2))
    path = folder / "scan-100dpi.pdf"
    small.save(path, "PDF", resolution=100.0, quality=70)
    return path


def measure(path: Path, kind: FileKind, ocr: OcrOptions, runs: int) -> tuple[float, int, str]:
    seconds = []
    text = ""
    pages = 0
    for _ in range(runs):
        started = time.perf_counter()
        document = extract(path, kind, ocr=ocr)
        seconds.append(time.perf_counter() - started)
        text = "\n".join(page.text for page in document.pages)
        pages = document.ocr_pages
    return median(seconds), pages, text


def main(runs: int) -> None:
    ocr = find_tesseract(OcrOptions())
    if ocr is None:
        raise SystemExit("Tesseract is not installed (apt-get install tesseract-ocr)")
    with tempfile.TemporaryDirectory() as folder:
        cases = [
            (
                "1-page scan, PDF",
                SCANS / "google-doc-document-scanned.pdf",
                FileKind.pdf,
                "google-doc-document.pdf",
            ),
            (
                "same page, JPEG",
                SCANS / "google-doc-document-scanned.jpg",
                FileKind.jpeg,
                "google-doc-document.pdf",
            ),
            (
                "same page at 100 dpi, PDF",
                low_resolution_copy(Path(folder)),
                FileKind.pdf,
                "google-doc-document.pdf",
            ),
            (
                "3-page two-column scan, PDF",
                SCANS / "multicolumn-scanned.pdf",
                FileKind.pdf,
                "multicolumn.pdf",
            ),
        ]
        rows = []
        for label, path, kind, original in cases:
            seconds, pages, text = measure(path, kind, ocr, runs)
            accuracy = character_accuracy(text, truth_of(original))
            rows.append(
                [label, pages, f"{seconds:.2f}", f"{pages / seconds:.2f}", f"{100 * accuracy:.1f}%"]
            )
    print(f"OCR with Tesseract ({ocr.languages}, one thread), median of {runs} runs; {machine()}")
    print(table(["scan", "pages", "seconds", "pages/s", "character accuracy"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    main(parser.parse_args().runs)
