"""Decide what an upload is from its bytes, with the extension only as a hint for text."""

from __future__ import annotations

import re
import unicodedata
import zipfile
from pathlib import Path, PurePosixPath

from docchat.extraction.kinds import FileKind
from docchat.kit.errors import UnsupportedMediaType

__all__ = ["FileKind", "detect_kind", "sanitize_filename"]


TEXT_SUFFIXES = {".txt": FileKind.text, ".text": FileKind.text, "": FileKind.text}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown"}
CSV_SUFFIXES = {".csv", ".tsv"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
ZIP_MAGIC = b"PK\x03\x04"
# The part every file of each Office Open XML kind has (ECMA-376: the main document part).
OFFICE_MAIN_PARTS = {
    "word/document.xml": FileKind.docx,
    "ppt/presentation.xml": FileKind.pptx,
    "xl/workbook.xml": FileKind.xlsx,
}
# OpenDocument and EPUB files name their type in a first, uncompressed `mimetype` entry.
PACKAGE_MIMETYPES = {FileKind.odt.value: FileKind.odt, FileKind.epub.value: FileKind.epub}
# Magic numbers of common binary formats, for a clearer refusal than "not UTF-8".
BINARY_MAGIC = {
    b"GIF8": "a GIF image (save it as PNG)",
    b"RIFF": "a WebP image or another RIFF file",
    ZIP_MAGIC: "a ZIP archive that is not a Word, PowerPoint, Excel, OpenDocument or EPUB file",
    b"\x7fELF": "an executable",
    b"MZ": "an executable",
    b"\xd0\xcf\x11\xe0": "an old Office document (save it as .docx, .xlsx or .pptx)",
    b"\x1f\x8b": "a gzip archive",
}
# Images are read with OCR (by the worker, which says so if it cannot).
IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": FileKind.png,
    b"\xff\xd8\xff": FileKind.jpeg,
    b"II*\x00": FileKind.tiff,
    b"MM\x00*": FileKind.tiff,
}
SUPPORTED = (
    "upload a PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), OpenDocument text (.odt), "
    "EPUB, CSV, HTML, Markdown (.md), plain text (.txt) or image (PNG, JPEG, TIFF) file"
)


def sanitize_filename(raw: str | None) -> str:
    """The last path part, without control characters, at most 255 characters."""
    name = (raw or "").replace("\\", "/").split("/")[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = re.sub(r"\s+", " ", name).strip().strip(".") or "document"
    if len(name) > 255:
        suffix = PurePosixPath(name).suffix[:16]
        name = name[: 255 - len(suffix)] + suffix
    return name


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start >= len(head) - 3
    return True


def _office_kind(path: Path | None) -> FileKind | None:
    """Which document a ZIP is (Office Open XML, OpenDocument, EPUB), from its parts or its
    `mimetype` entry (None: none of these)."""
    if path is None:
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            declared = archive.read("mimetype")[:100] if "mimetype" in names else b""
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if kind := PACKAGE_MIMETYPES.get(declared.decode("ascii", "replace").strip()):
        return kind
    for part, kind in OFFICE_MAIN_PARTS.items():
        if part in names:
            return kind
    return None


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    return start.startswith((b"<!doctype html", b"<html"))


def detect_kind(filename: str, head: bytes, path: Path | None = None) -> FileKind:
    """The kind of an upload from its first bytes (and, for ZIP-based files, its list of parts
    read from `path`); the name decides only between kinds of text."""
    suffix = PurePosixPath(filename.lower()).suffix
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"%PDF-" or b"%PDF-" in head[:1024]:
        return FileKind.pdf
    if suffix == ".pdf":
        raise UnsupportedMediaType("The file is named .pdf but its content is not a PDF")
    if head.startswith(ZIP_MAGIC) and (office := _office_kind(path)) is not None:
        return office
    for magic, image in IMAGE_MAGIC.items():
        if head.startswith(magic):
            return image
    for magic, what in BINARY_MAGIC.items():
        if head.startswith(magic):
            raise UnsupportedMediaType(f"The file looks like {what}; {SUPPORTED}")
    if not _looks_like_text(head):
        raise UnsupportedMediaType(f"The file is binary, not text; {SUPPORTED}")
    if suffix in HTML_SUFFIXES or _looks_like_html(head):
        return FileKind.html
    if suffix in CSV_SUFFIXES:
        return FileKind.csv
    if suffix in MARKDOWN_SUFFIXES:
        return FileKind.markdown
    if suffix in TEXT_SUFFIXES:
        return TEXT_SUFFIXES[suffix]
    raise UnsupportedMediaType(f"Files of type {suffix!r} are not supported; {SUPPORTED}")
