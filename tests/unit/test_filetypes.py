from __future__ import annotations

import pytest

from docchat.documents.filetypes import FileKind, detect_kind, sanitize_filename
from docchat.kit.errors import UnsupportedMediaType


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\notes.md", "notes.md"),
        ("bad\x00name\n.txt", "badname.txt"),
        ("", "document"),
        ("..", "document"),
        (None, "document"),
    ],
)
def test_sanitize_filename(raw: str | None, expected: str) -> None:
    assert sanitize_filename(raw) == expected


def test_long_filename_keeps_its_extension() -> None:
    name = sanitize_filename("a" * 400 + ".pdf")
    assert len(name) == 255 and name.endswith(".pdf")


def test_kind_comes_from_content() -> None:
    assert detect_kind("scan.pdf", b"%PDF-1.7\n...") is FileKind.pdf
    # A PDF with a misleading name is still a PDF.
    assert detect_kind("notes.txt", b"%PDF-1.4\n...") is FileKind.pdf
    assert detect_kind("notes.md", b"# Title\n") is FileKind.markdown
    assert detect_kind("notes.txt", "héllo".encode()) is FileKind.text


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", FileKind.png),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", FileKind.jpeg),
        (b"II*\x00\x08\x00\x00\x00", FileKind.tiff),
        (b"MM\x00*\x00\x00\x00\x08", FileKind.tiff),
    ],
)
def test_images_are_taken_for_ocr_whatever_their_name(head: bytes, kind: FileKind) -> None:
    assert detect_kind("scan.txt", head) is kind
    assert detect_kind("page", head) is kind


@pytest.mark.parametrize(
    ("name", "head", "fragment"),
    [
        ("photo.pdf", b"\x89PNG\r\n\x1a\n....", "not a PDF"),
        ("photo.txt", b"GIF89a....", "GIF image"),
        ("archive.md", b"PK\x03\x04rest", "ZIP archive that is not"),
        ("binary.txt", b"abc\x00def", "binary"),
        ("latin1.txt", "café au lait".encode("latin-1"), "binary"),
        ("sheet.xlsx", b"just text", "not supported"),
    ],
)
def test_unsupported_content_is_refused(name: str, head: bytes, fragment: str) -> None:
    with pytest.raises(UnsupportedMediaType) as error:
        detect_kind(name, head)
    assert fragment in error.value.message
