"""Running headers, footers and page numbers out of a PDF's pages (`extraction.running_lines`)."""

from __future__ import annotations

from pathlib import Path

from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import PageText
from docchat.extraction.running_lines import without_running_lines

PDFLATEX = Path(__file__).resolve().parents[1] / "fixtures" / "pdf" / "pdflatex-4-pages.pdf"


def _body(page: int) -> str:
    ending = ("apples", "boats", "cranes", "dunes", "eagles", "ferns", "gulls", "harbours")[
        page % 8
    ]
    return f"The body of page {page} says something of its own.\nIt ends on {ending}."


def test_a_page_number_footer_of_a_real_pdftex_document_is_taken_out() -> None:
    pages = extract(PDFLATEX, FileKind.pdf).pages
    last_lines = [page.text.strip().splitlines()[-1] for page in pages]
    assert not any(line.strip().isdigit() for line in last_lines), last_lines


def test_a_header_with_the_page_s_number_and_its_section_is_taken_out() -> None:
    """As in a real lecture script: "8 1.2. METRISCHE RÄUME" heads page 11."""
    pages = [
        PageText(page=number, text=f"{number - 3} 1.2. METRIC SPACES\n{_body(number)}")
        for number in range(11, 15)
    ]
    kept = without_running_lines(pages)
    assert [page.text for page in kept] == [_body(number) for number in range(11, 15)]


def test_a_title_repeated_at_the_foot_of_most_pages_is_taken_out_and_a_table_kept() -> None:
    footer = "Lumen Harbour Authority, annual report 2025"
    pages = [PageText(page=n, text=f"{_body(n)}\n{footer}") for n in range(1, 5)]
    table = PageText(page=2, text="| a | b |\n| --- | --- |\n| 1 | 2 |", location="table 1, row 2")
    kept = without_running_lines([*pages[:2], table, *pages[2:]])
    assert not any(footer in page.text for page in kept)
    assert table in kept


def test_lines_that_merely_hold_numbers_are_kept() -> None:
    """A first line that holds a number is no page number unless it follows the pages."""
    pages = [
        PageText(page=n, text=f"Example {n * 7} shows the rule.\n{_body(n)}") for n in range(1, 6)
    ]
    assert without_running_lines(pages) == pages
    short = [PageText(page=n, text=f"{n}\n{_body(n)}") for n in range(1, 3)]
    assert without_running_lines(short) == short  # two pages are too few to tell


def test_a_page_s_only_line_is_kept_even_when_every_page_repeats_it() -> None:
    pages = [PageText(page=n, text="The same sentence on every page.") for n in range(1, 6)]
    assert without_running_lines(pages) == pages
