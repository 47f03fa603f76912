"""The kinds of file docchat reads (decided from an upload's bytes by `documents.filetypes`)."""

from __future__ import annotations

from enum import StrEnum


class FileKind(StrEnum):
    pdf = "application/pdf"
    markdown = "text/markdown"
    text = "text/plain"
