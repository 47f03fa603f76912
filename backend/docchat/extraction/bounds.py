"""How much one file may become: text in proportion to its size, and a number of chunks.

A few hundred kilobytes of compressed XML can declare millions of cells (OpenDocument's
`number-columns-repeated`, a PDF's pages all drawing one content stream), and every chunk
costs the worker an embedding. Real documents give at most a few characters of text per
byte of file (the wide spreadsheets in the tests, whose rows repeat their header, about 8);
a file that gives far more is refused with its reason before it is chunked or embedded.
"""

from __future__ import annotations

from dataclasses import dataclass

from docchat.extraction.reader import ExtractedDocument, ExtractionError

MB = 1024 * 1024


@dataclass(frozen=True)
class ExpansionLimits:
    # Text a file may give: `text_ratio` characters per byte of file, plus `text_floor_chars`.
    text_ratio: float = 20.0
    text_floor_chars: int = 1_000_000
    max_chunks: int = 100_000

    def max_text_chars(self, file_bytes: int) -> int:
        return int(self.text_ratio * file_bytes) + self.text_floor_chars

    def check_text(self, document: ExtractedDocument, file_bytes: int, chunk_size: int) -> None:
        """Refuse text out of proportion to the file, or that cannot fit in `max_chunks`
        chunks of `chunk_size` (checked before chunking, which would cost as much again)."""
        chars = sum(len(page.text) for page in document.pages)
        limit = self.max_text_chars(file_bytes)
        if chars > limit:
            raise ExtractionError(
                f"This file ({_size(file_bytes)}) expands to {_millions(chars)} characters of "
                f"text, far more than a file of its size should (at most {_millions(limit)}); "
                "split it into smaller files, or remove empty or repeated rows and columns, "
                "and upload it again"
            )
        if chars > self.max_chunks * chunk_size:
            raise self._too_many_chunks()

    def check_chunks(self, count: int) -> None:
        if count > self.max_chunks:
            raise self._too_many_chunks()

    def _too_many_chunks(self) -> ExtractionError:
        return ExtractionError(
            f"This file holds more text than one document may (more than {self.max_chunks:,} "
            "passages); split it into smaller files and upload them separately"
        )


def _size(file_bytes: int) -> str:
    if file_bytes >= MB:
        return f"{file_bytes / MB:.1f} MB"
    return f"{max(1, round(file_bytes / 1024))} KB"


def _millions(chars: int) -> str:
    return f"{chars / 1_000_000:.1f} million" if chars >= 1_000_000 else f"{chars:,}"
