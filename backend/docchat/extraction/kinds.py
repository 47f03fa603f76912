"""The kinds of file docchat reads (decided from an upload's bytes by `documents.filetypes`)."""

from __future__ import annotations

from enum import StrEnum


class FileKind(StrEnum):
    pdf = "application/pdf"
    markdown = "text/markdown"
    text = "text/plain"
    csv = "text/csv"
    html = "text/html"
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    odt = "application/vnd.oasis.opendocument.text"
    epub = "application/epub+zip"
    png = "image/png"
    jpeg = "image/jpeg"
    tiff = "image/tiff"

    @property
    def label(self) -> str:
        """What a person calls a file of this kind, for messages: "Excel file", "PDF"."""
        return _LABELS[self]


_LABELS: dict[FileKind, str] = {
    FileKind.pdf: "PDF",
    FileKind.markdown: "Markdown file",
    FileKind.text: "text file",
    FileKind.csv: "CSV file",
    FileKind.html: "HTML file",
    FileKind.docx: "Word file",
    FileKind.pptx: "PowerPoint file",
    FileKind.xlsx: "Excel file",
    FileKind.odt: "OpenDocument file",
    FileKind.epub: "EPUB file",
    FileKind.png: "image",
    FileKind.jpeg: "image",
    FileKind.tiff: "image",
}
