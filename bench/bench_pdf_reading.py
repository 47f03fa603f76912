"""Reading PDFs with and without the table reader (`extraction.pdf_tables`), in one run.

    .venv/bin/python -m bench.bench_pdf_reading [--runs 3]

Each PDF is read by `formats.extract` as the worker reads it, with the table reader (now) and
with pypdf alone (before), the two taking turns; prints the median seconds of each, the parts
located as table rows, and the ratio. Text-only PDFs must stay within 10% (issue 71): the table
reader never opens a page whose content draws no rules.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fpdf import FPDF
from tests.support.files import filler, make_pdf

from bench.common import machine, median, table
from docchat.extraction import formats
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractedDocument, extract_pdf

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def _ruled_tables(pages: int, tables_per_page: int, rows: int, height: float = 4.5) -> bytes:
    """Pages of a paragraph and bordered tables of 3 columns (fpdf2 cells with borders)."""
    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_font("helvetica", size=min(8, height * 2))
    for page in range(pages):
        pdf.add_page()
        pdf.multi_cell(0, 5, filler(f"page {page}", 3))
        for number in range(tables_per_page):
            for row in range(rows):
                for column in range(3):
                    text = f"item {number}.{row}" if column == 0 else f"{(row + 1) * column} kg"
                    pdf.cell(190 / 3, height, text if row else f"column {column}", border=1)
                pdf.ln()
            pdf.ln(height / 2)
    return bytes(pdf.output())


def _cases(folder: Path) -> list[tuple[str, Path]]:
    made = {
        "text only, 100 pages (fpdf2)": make_pdf([filler(f"topic {n}", 40) for n in range(100)]),
        "a ruled table on each of 30 pages (fpdf2)": _ruled_tables(30, 1, 25),
        "30 tiny tables on each of 20 pages (fpdf2)": _ruled_tables(20, 30, 2, height=3),
    }
    cases = []
    for label, data in made.items():
        path = folder / f"{len(cases)}.pdf"
        path.write_bytes(data)
        cases.append((label, path))
    return [
        *cases,
        ("pdfTeX, 4 pages (real)", FIXTURES / "pdf" / "pdflatex-4-pages.pdf"),
        ("two columns, 3 pages (real)", FIXTURES / "ocr" / "multicolumn.pdf"),
        ("Google Docs, 1 page (real)", FIXTURES / "ocr" / "google-doc-document.pdf"),
        (
            "LibreOffice table, 1 page (real)",
            FIXTURES / "pdf" / "libreoffice-harbour-fees-table.pdf",
        ),
    ]


def _plain(path: Path) -> ExtractedDocument:
    return extract_pdf(path)


def _with_tables(path: Path) -> ExtractedDocument:
    return formats.extract(path, FileKind.pdf)


def _seconds(read: Callable[[Path], ExtractedDocument], path: Path) -> float:
    started = time.perf_counter()
    read(path)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, path in _cases(Path(folder)):
            before: list[float] = []
            now: list[float] = []
            for _ in range(args.runs):
                before.append(_seconds(_plain, path))
                now.append(_seconds(_with_tables, path))
            document = _with_tables(path)
            table_parts = sum(1 for page in document.pages if page.location)
            rows.append(
                [
                    label,
                    str(document.page_count),
                    str(table_parts),
                    f"{median(before):.3f}",
                    f"{median(now):.3f}",
                    f"{median(now) / median(before):.2f}",
                ]
            )
    print(f"PDF reading, median of {args.runs} runs; {machine()}")
    print(
        table(
            [
                "PDF",
                "pages",
                "table parts",
                "s, pypdf alone (before)",
                "s, with tables (now)",
                "now / before",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
