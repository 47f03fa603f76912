"""Decide what an upload is from its bytes, with the extension only as a hint for text."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

from docchat.extraction.kinds import FileKind
from docchat.kit.errors import UnsupportedMediaType

__all__ = ["FileKind", "detect_kind", "sanitize_filename"]


TEXT_SUFFIXES = {".txt": FileKind.text, ".text": FileKind.text, "": FileKind.text}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown"}
# Magic numbers of common binary formats, for a clearer refusal than "not UTF-8".
BINARY_MAGIC = {
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"PK\x03\x04": "a ZIP archive (or an Office document)",
    b"\x7fELF": "an executable",
    b"MZ": "an executable",
    b"\xd0\xcf\x11\xe0": "an old Office document",
    b"\x1f\x8b": "a gzip archive",
}
SUPPORTED = "upload a PDF, Markdown (.md) or plain text (.txt) file"


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


def detect_kind(filename: str, head: bytes) -> FileKind:
    suffix = PurePosixPath(filename.lower()).suffix
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"%PDF-" or b"%PDF-" in head[:1024]:
        return FileKind.pdf
    if suffix == ".pdf":
        raise UnsupportedMediaType("The file is named .pdf but its content is not a PDF")
    for magic, what in BINARY_MAGIC.items():
        if head.startswith(magic):
            raise UnsupportedMediaType(f"The file looks like {what}; {SUPPORTED}")
    if not _looks_like_text(head):
        raise UnsupportedMediaType(f"The file is binary, not text; {SUPPORTED}")
    if suffix in MARKDOWN_SUFFIXES:
        return FileKind.markdown
    if suffix in TEXT_SUFFIXES:
        return TEXT_SUFFIXES[suffix]
    raise UnsupportedMediaType(f"Files of type {suffix!r} are not supported; {SUPPORTED}")
