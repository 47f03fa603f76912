"""OCR of scanned PDF pages and images with Debian's Tesseract (issue 18): the text comes out
close to the original's, in reading order, marked as OCR, and hostile or unreadable pictures
fail with a reason."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader

from docchat.extraction.formats import NO_TEXT_BY_OCR, NO_TEXT_WITHOUT_OCR, extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import (
    OCR_IMAGE_LOCATION,
    OCR_PAGE_LOCATION,
    OcrOptions,
    find_tesseract,
)
from docchat.extraction.reader import ExtractionError
from tests.support.text_accuracy import character_accuracy, words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCANS = FIXTURES / "ocr"


@pytest.fixture(scope="module")
def ocr() -> OcrOptions:
    found = find_tesseract(OcrOptions())
    assert found is not None, "the tests need Tesseract (apt-get install tesseract-ocr)"
    return found


def test_a_scanned_pdf_page_is_read_close_to_its_original_and_marked(ocr: OcrOptions) -> None:
    truth = PdfReader(SCANS / "google-doc-document.pdf").pages[0].extract_text()
    document = extract(SCANS / "google-doc-document-scanned.pdf", FileKind.pdf, ocr=ocr)
    [page] = document.pages
    assert document.ocr_pages == 1 and page.page == 1
    assert page.location == OCR_PAGE_LOCATION
    assert character_accuracy(page.text, truth) > 0.9  # pypdf orders its table differently
    assert "Readability counts" in page.text


def test_two_columns_are_read_column_by_column(ocr: OcrOptions) -> None:
    document = extract(SCANS / "multicolumn-scanned.pdf", FileKind.pdf, ocr=ocr)
    assert document.ocr_pages == 3
    first = words(document.pages[0].text)
    # The left column ends before the right one begins (not line by line across both).
    left_column = first.index("Lorem ipsum dolor sit amet")
    right_column = first.index("Fusce mauris")
    assert left_column < right_column
    truth = " ".join(p.extract_text() for p in PdfReader(SCANS / "multicolumn.pdf").pages)
    read = " ".join(page.text for page in document.pages)
    assert character_accuracy(read, truth) > 0.9


def test_an_image_upload_is_one_page_of_ocr_text(ocr: OcrOptions) -> None:
    document = extract(SCANS / "google-doc-document-scanned.jpg", FileKind.jpeg, ocr=ocr)
    [page] = document.pages
    assert page.page is None and page.location == OCR_IMAGE_LOCATION
    assert "Beautiful is better than ugly" in page.text


def test_a_phone_photo_stored_sideways_is_read_upright(ocr: OcrOptions, tmp_path: Path) -> None:
    upright = Image.open(SCANS / "google-doc-document-scanned.jpg")
    sideways = upright.rotate(90, expand=True)  # as the camera stored it
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: turn 90° clockwise to show it
    path = tmp_path / "photo.jpg"
    sideways.save(path, exif=exif)
    document = extract(path, FileKind.jpeg, ocr=ocr)
    assert "Readability counts" in document.pages[0].text


def test_each_page_of_a_tiff_is_a_page(ocr: OcrOptions, tmp_path: Path) -> None:
    scan = Image.open(SCANS / "google-doc-document-scanned.jpg")
    blank = Image.new("L", scan.size, 255)
    path = tmp_path / "fax.tiff"
    scan.save(path, save_all=True, append_images=[blank, scan], compression="tiff_lzw")
    document = extract(path, FileKind.tiff, ocr=ocr)
    assert [page.page for page in document.pages] == [1, 2, 3]
    assert all(page.location == OCR_PAGE_LOCATION for page in document.pages)
    assert document.pages[1].text == "" and "Flat is better" in document.pages[2].text


def test_an_image_without_text_fails_with_a_reason(ocr: OcrOptions, tmp_path: Path) -> None:
    path = tmp_path / "white.png"
    Image.new("L", (800, 600), 255).save(path)
    with pytest.raises(ExtractionError, match="No text was found in the image"):
        extract(path, FileKind.png, ocr=ocr)


def test_a_huge_image_is_refused_before_it_is_decoded(ocr: OcrOptions, tmp_path: Path) -> None:
    path = tmp_path / "poster.png"
    Image.new("1", (12_000, 9_000), 1).save(path)  # 108 megapixels in a few kilobytes
    assert path.stat().st_size < 100_000
    with pytest.raises(ExtractionError, match=r"12000x9000 pixels .* up to 50 megapixels"):
        extract(path, FileKind.png, ocr=ocr)


def test_a_damaged_image_fails_with_a_reason(ocr: OcrOptions, tmp_path: Path) -> None:
    buffer = BytesIO()
    Image.new("L", (400, 300), 200).save(buffer, format="JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buffer.getvalue()[:200])
    with pytest.raises(ExtractionError, match="could not be read"):
        extract(path, FileKind.jpeg, ocr=ocr)


def test_pictures_without_text_leave_the_pdf_failed_as_no_text(ocr: OcrOptions) -> None:
    with pytest.raises(ExtractionError) as error:
        extract(FIXTURES / "pdf" / "imagemagick-images.pdf", FileKind.pdf, ocr=ocr)
    assert str(error.value) == NO_TEXT_BY_OCR


def test_without_ocr_scans_and_images_say_what_is_missing() -> None:
    with pytest.raises(ExtractionError) as error:
        extract(SCANS / "google-doc-document-scanned.pdf", FileKind.pdf, ocr=None)
    assert str(error.value) == NO_TEXT_WITHOUT_OCR
    with pytest.raises(ExtractionError, match="OCR, which is not installed"):
        extract(SCANS / "google-doc-document-scanned.jpg", FileKind.jpeg, ocr=None)


def test_a_scan_longer_than_the_ocr_page_limit_is_refused(ocr: OcrOptions) -> None:
    limited = OcrOptions(languages=ocr.languages, max_pages=2, command=ocr.command)
    with pytest.raises(ExtractionError, match="more than 2 scanned pages"):
        extract(SCANS / "multicolumn-scanned.pdf", FileKind.pdf, ocr=limited)


def test_a_missing_language_model_turns_ocr_off_instead_of_failing_later() -> None:
    assert find_tesseract(OcrOptions(languages="eng+xyz")) is None
    assert find_tesseract(OcrOptions(command="no-such-ocr-program")) is None
