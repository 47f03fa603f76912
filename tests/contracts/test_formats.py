"""The file format port (`extraction.kinds.FORMATS`, read by `extraction.formats.extract`):
every kind in the table is recognised from its bytes (and its name, for text), and every kind
but images (read by OCR, see test_ocr.py) gives back the text it holds. A kind added to the
table without a sample here fails `test_every_kind_has_a_sample`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from docchat.documents.filetypes import detect_kind
from docchat.extraction.formats import READERS, extract
from docchat.extraction.kinds import FORMATS, FileKind
from tests.support.files import make_pdf
from tests.support.office_files import make_docx, make_epub, make_odt, make_pptx, make_xlsx

MARKER = "The ferry to Harbour Island leaves at nine"
OCR_FIXTURE = Path(__file__).parents[1] / "fixtures" / "ocr" / "google-doc-document-scanned.jpg"


def _png() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


SAMPLES: dict[FileKind, Callable[[], bytes]] = {
    FileKind.pdf: lambda: make_pdf([MARKER]),
    FileKind.docx: lambda: make_docx([(1, "Timetable", [MARKER])]),
    FileKind.pptx: lambda: make_pptx([("Timetable", MARKER)]),
    FileKind.xlsx: lambda: make_xlsx({"Ferries": [["Note"], [MARKER]]}),
    FileKind.odt: lambda: make_odt(f"<text:p>{MARKER}</text:p>"),
    FileKind.epub: lambda: make_epub([("Timetable", f"<p>{MARKER}</p>")]),
    FileKind.csv: lambda: f"note,day\n{MARKER},Monday\n".encode(),
    FileKind.html: lambda: f"<html><body><p>{MARKER}</p></body></html>".encode(),
    FileKind.markdown: lambda: f"# Timetable\n\n{MARKER}.\n".encode(),
    FileKind.text: lambda: f"{MARKER}.\n".encode(),
    FileKind.png: _png,
    FileKind.jpeg: OCR_FIXTURE.read_bytes,
    FileKind.tiff: lambda: b"II*\x00" + b"\x00" * 64,
}
IMAGES = {FileKind.png, FileKind.jpeg, FileKind.tiff}


def test_every_kind_has_a_format_and_a_sample() -> None:
    assert set(FORMATS) == set(FileKind)
    assert set(SAMPLES) == set(FileKind)


def test_every_kind_but_pdf_and_images_has_a_reader_in_extraction() -> None:
    assert set(READERS) == set(FileKind) - IMAGES - {FileKind.pdf}
    # Readers are named by string: the layering test cannot see those imports, this can.
    references = [entry.reader for entry in FORMATS.values() if entry.reader]
    assert all(ref.startswith("docchat.extraction.") for ref in references), references


@pytest.fixture(params=sorted(FileKind, key=str))
def kind(request: pytest.FixtureRequest) -> FileKind:
    return FileKind(request.param)


def _written(folder: Path, kind: FileKind, suffix: str) -> Path:
    path = folder / f"sample{suffix}"
    path.write_bytes(SAMPLES[kind]())
    return path


def test_a_file_is_known_by_its_bytes_under_each_of_its_names(
    kind: FileKind, tmp_path: Path
) -> None:
    for suffix in FORMATS[kind].suffixes:
        path = _written(tmp_path, kind, suffix)
        head = path.read_bytes()[:8192]
        assert detect_kind(path.name, head, path) is kind, suffix


def test_binary_kinds_are_known_whatever_their_name(kind: FileKind, tmp_path: Path) -> None:
    if FORMATS[kind].text:
        pytest.skip("kinds of text are told apart by their name")
    path = _written(tmp_path, kind, ".bin")
    assert detect_kind("upload.bin", path.read_bytes()[:8192], path) is kind


def test_the_text_a_file_holds_comes_back(kind: FileKind, tmp_path: Path) -> None:
    if kind in IMAGES:
        pytest.skip("images are read by OCR: test_ocr.py")
    path = _written(tmp_path, kind, FORMATS[kind].suffixes[0])
    document = extract(path, kind)
    text = " ".join(page.text for page in document.pages)
    assert MARKER in " ".join(text.split()), text[:300]
    if FORMATS[kind].parts is not None:
        assert document.page_count >= 1
