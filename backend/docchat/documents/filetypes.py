"""Decide what an upload is from its bytes, with the extension only as a hint for text."""

from __future__ import annotations

import re
import unicodedata
import zipfile
from pathlib import Path, PurePosixPath

from docchat.extraction.kinds import FORMATS, FileKind
from docchat.kit.errors import UnsupportedMediaType

__all__ = ["FileKind", "detect_kind", "sanitize_filename"]


ZIP_MAGIC = b"PK\x03\x04"
PDF_MAGIC = b"%PDF-"
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


def _supported() -> str:
    """ "upload a PDF (.pdf), Word file (.docx), ... file": every kind, from the table."""
    named: dict[str, list[str]] = {}
    for entry in FORMATS.values():
        named.setdefault(entry.label, []).extend(s for s in entry.suffixes if s)
    listed = ", ".join(f"{label} ({', '.join(suffixes)})" for label, suffixes in named.items())
    return f"upload a file of one of these kinds: {listed}"


SUPPORTED = _supported()


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


def _package_kind(path: Path | None) -> FileKind | None:
    """Which document a ZIP is (Office Open XML, OpenDocument, EPUB...), from its parts or its
    `mimetype` entry (None: none of the kinds docchat reads)."""
    if path is None:
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            declared = archive.read("mimetype")[:100] if "mimetype" in names else b""
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    named = declared.decode("ascii", "replace").strip()
    for entry in FORMATS.values():
        if entry.names_itself and entry.kind.value == named:
            return entry.kind
    for entry in FORMATS.values():
        if entry.zip_part is not None and entry.zip_part in names:
            return entry.kind
    return None


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _by_magic(head: bytes) -> FileKind | None:
    for entry in FORMATS.values():
        if entry.magic and entry.kind is not FileKind.pdf and head.startswith(entry.magic):
            return entry.kind
    return None


def _text_kind(suffix: str, head: bytes) -> FileKind | None:
    if suffix in FORMATS[FileKind.html].suffixes or _looks_like_html(head):
        return FileKind.html
    for entry in FORMATS.values():
        if entry.text and suffix in entry.suffixes:
            return entry.kind
    return None


def detect_kind(filename: str, head: bytes, path: Path | None = None) -> FileKind:
    """The kind of an upload from its first bytes (and, for ZIP-based files, its list of parts
    read from `path`); the name decides only between kinds of text."""
    suffix = PurePosixPath(filename.lower()).suffix
    # A PDF may start with a few bytes of something else: readers look in the first 1,024.
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == PDF_MAGIC or PDF_MAGIC in head[:1024]:
        return FileKind.pdf
    if suffix == ".pdf":
        raise UnsupportedMediaType("The file is named .pdf but its content is not a PDF")
    if head.startswith(ZIP_MAGIC) and (package := _package_kind(path)) is not None:
        return package
    if (binary := _by_magic(head)) is not None:
        return binary
    for magic, what in BINARY_MAGIC.items():
        if head.startswith(magic):
            raise UnsupportedMediaType(f"The file looks like {what}; {SUPPORTED}")
    if not _looks_like_text(head):
        raise UnsupportedMediaType(f"The file is binary, not text; {SUPPORTED}")
    if (text := _text_kind(suffix, head)) is not None:
        return text
    raise UnsupportedMediaType(f"Files of type {suffix!r} are not supported; {SUPPORTED}")
