"""Pictures drawn on PDF pages of text, read by OCR (`extraction.pdf_pictures`): a chart's
text located as its picture; the scan under a searchable PDF, an icon, a logo on every page
and a picture too large to decode are not read again or at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, NumberObject

from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import OcrOptions, find_tesseract

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pdf"
CHART = FIXTURES / "imagemagick-occupancy-chart.png"
TEXT = (
    "The Lumen Harbour Authority measured how full its berths were over the summer. The "
    "chart below gives the share of nights each berth was taken in July."
)


@pytest.fixture(scope="module")
def ocr() -> OcrOptions:
    found = find_tesseract(OcrOptions())
    assert found is not None, "the tests need Tesseract (apt-get install tesseract-ocr)"
    return found


def _report(path: Path, pages: int = 1) -> Path:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for _ in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 6, TEXT)
        pdf.image(str(CHART), x=10, y=50, w=150)
    pdf.output(str(path))
    return path


def _read(path: Path, ocr: OcrOptions | None) -> list[tuple[int | None, str | None, str]]:
    document = extract(path, FileKind.pdf, ocr=ocr)
    return [(page.page, page.location, page.text) for page in document.pages]


def test_a_chart_on_a_page_of_text_is_read_after_the_page_s_text(
    ocr: OcrOptions, tmp_path: Path
) -> None:
    parts = _read(_report(tmp_path / "report.pdf"), ocr)
    assert [(page, location) for page, location, _ in parts] == [
        (1, None),
        (1, "image 1, text by OCR"),
    ]
    assert "North pontoon: 87 percent" in parts[1][2]


def test_without_ocr_the_page_s_text_alone_is_read(tmp_path: Path) -> None:
    parts = _read(_report(tmp_path / "report.pdf"), None)
    assert [location for _, location, _ in parts] == [None]


def test_a_picture_drawn_on_every_page_is_read_once(ocr: OcrOptions, tmp_path: Path) -> None:
    parts = _read(_report(tmp_path / "logo.pdf", pages=3), ocr)
    assert [page for page, location, _ in parts if location] == [1]


def test_the_scan_under_a_searchable_pdf_s_text_is_not_read_again(
    ocr: OcrOptions, tmp_path: Path
) -> None:
    """A picture over most of the page is the page itself, whose text layer it has already."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 6, TEXT)
    pdf.image(str(CHART), x=0, y=0, w=210, h=297)
    pdf.output(str(tmp_path / "page.pdf"))
    parts = _read(tmp_path / "page.pdf", ocr)
    assert [location for _, location, _ in parts] == [None]


def test_a_picture_too_large_to_decode_is_skipped_by_its_declared_size(
    ocr: OcrOptions, tmp_path: Path
) -> None:
    writer = PdfWriter(clone_from=PdfReader(_report(tmp_path / "chart.pdf")))
    image = writer.pages[0]["/Resources"]["/XObject"]["/I1"].get_object()
    image[NameObject("/Width")] = NumberObject(100_000)
    image[NameObject("/Height")] = NumberObject(100_000)
    writer.write(tmp_path / "bomb.pdf")
    parts = _read(tmp_path / "bomb.pdf", ocr)
    assert [location for _, location, _ in parts] == [None]
    assert "Lumen Harbour" in parts[0][2]
