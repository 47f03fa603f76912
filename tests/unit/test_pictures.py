"""Text inside the pictures of Word, PowerPoint and OpenDocument files, read by OCR
(`extraction.pictures`), on files pandoc wrote, and the bounds a hostile file meets."""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import Path

import docx
import pytest
from PIL import Image

from docchat.extraction import pictures as pictures_module
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import OcrOptions, find_tesseract, recognize
from docchat.extraction.pictures import picture_parts

OFFICE = Path(__file__).resolve().parents[1] / "fixtures" / "office"
REPORT = "pandoc-harbour-report-with-chart"


@pytest.fixture(scope="module")
def ocr() -> OcrOptions:
    found = find_tesseract(OcrOptions())
    assert found is not None, "the tests need Tesseract (apt-get install tesseract-ocr)"
    return found


@pytest.mark.parametrize(
    ("suffix", "kind", "where"),
    [
        ("docx", FileKind.docx, "Image 2, text by OCR"),
        ("odt", FileKind.odt, "Image 2, text by OCR"),
        ("pptx", FileKind.pptx, "Slide 2, image 1, text by OCR"),
    ],
)
def test_a_chart_s_text_is_read_and_located_as_its_picture(
    ocr: OcrOptions, suffix: str, kind: FileKind, where: str
) -> None:
    document = extract(OFFICE / f"{REPORT}.{suffix}", kind, ocr=ocr)
    read = [page for page in document.pages if page.location and "by OCR" in page.location]
    # The chart only: the 40x40 icon before it is too small to hold text.
    assert [page.location for page in read] == [where]
    assert "North pontoon: 87 percent" in read[0].text
    assert "South quay: 64 percent" in read[0].text
    assert document.ocr_pages == 1
    # The document's own text is all still there, before the pictures'.
    assert "Fees stay as they are" in document.pages[-2].text


def test_without_ocr_a_document_s_pictures_are_not_read() -> None:
    document = extract(OFFICE / f"{REPORT}.docx", FileKind.docx)
    assert not any("87 percent" in page.text for page in document.pages)
    assert document.ocr_pages == 0


def _docx_with_pictures(path: Path, pictures: list[bytes]) -> Path:
    document = docx.Document()
    document.add_paragraph("A report whose pictures are hostile or too many.")
    for number in range(len(pictures)):
        # Each a different file (python-docx stores equal pictures once), swapped below.
        document.add_picture(BytesIO(_png(80 + number, 80)))
    document.save(str(path))
    # python-docx checks a picture's header; swap the stored files for the ones under test.
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    media = sorted(name for name in members if name.startswith("word/media/"))
    for name, picture in zip(media, pictures, strict=False):
        members[name] = picture
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _png(width: int, height: int) -> bytes:
    image = Image.new("1", (width, height), 1)
    buffer = BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_image_bomb_inside_a_document_is_skipped_and_its_text_read(
    ocr: OcrOptions, tmp_path: Path
) -> None:
    bomb = _png(20_000, 20_000)  # 400 megapixels in a few kilobytes
    path = _docx_with_pictures(tmp_path / "bomb.docx", [bomb])
    document = extract(path, FileKind.docx, ocr=ocr)
    assert "hostile or too many" in document.pages[0].text
    assert document.ocr_pages == 0


def test_no_more_pictures_are_read_than_ocr_reads_pages(
    ocr: OcrOptions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pictures = [_png(200 + number, 200) for number in range(5)]
    path = _docx_with_pictures(tmp_path / "many.docx", pictures)
    bounded = OcrOptions(
        languages=ocr.languages, page_seconds=ocr.page_seconds, max_pages=2, command=ocr.command
    )
    read: list[int] = []

    def counting(image: Image.Image, options: OcrOptions) -> str:
        read.append(image.width)
        return recognize(image, options)

    monkeypatch.setattr(pictures_module, "recognize", counting)
    picture_parts(path, FileKind.docx, bounded)
    assert read == [200, 201]


def test_a_damaged_picture_file_leaves_the_document_s_own_text(
    ocr: OcrOptions, tmp_path: Path
) -> None:
    """An OpenDocument file is read from its content.xml: a picture file whose bytes are
    damaged fails its CRC only when OCR reads it, and must not fail the document."""
    path = tmp_path / "damaged.odt"
    data = bytearray((OFFICE / f"{REPORT}.odt").read_bytes())
    with zipfile.ZipFile(OFFICE / f"{REPORT}.odt") as archive:
        info = archive.getinfo("Pictures/1.png")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 100
    data[start : start + 16] = bytes(16)
    path.write_bytes(bytes(data))
    document = extract(path, FileKind.odt, ocr=ocr)
    assert any("Fees stay as they are" in page.text for page in document.pages)
    assert document.ocr_pages == 0
