"""What one file may become (security issue, item A): OpenDocument tables read within their
column cap whatever they declare, and text and chunks bounded by the file's size."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from docchat.extraction.bounds import ExpansionLimits
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.extraction.sandbox import prepare
from docchat.extraction.structure import MAX_COLUMNS
from tests.support.office_files import make_odt, odt_with_repeated_cells

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KINDS = {
    ".pdf": FileKind.pdf,
    ".docx": FileKind.docx,
    ".pptx": FileKind.pptx,
    ".xlsx": FileKind.xlsx,
    ".odt": FileKind.odt,
    ".epub": FileKind.epub,
    ".html": FileKind.html,
    ".csv": FileKind.csv,
}
READABLE = [
    path
    for path in sorted(FIXTURES.rglob("*"))
    if path.suffix in KINDS
    and "scanned" not in path.name
    and path.name not in {"imagemagick-images.pdf", "libreoffice-writer-password.pdf"}
]


def _table(*rows: str) -> str:
    return f"<table:table>{''.join(rows)}</table:table>"


def _row(*cells: str) -> str:
    return f"<table:table-row>{''.join(cells)}</table:table-row>"


def _cell(text: str = "", repeat: str | None = None) -> str:
    repeated = f' table:number-columns-repeated="{repeat}"' if repeat else ""
    body = f"<text:p>{text}</text:p>" if text else ""
    return f"<table:table-cell{repeated}>{body}</table:table-cell>"


def _odt_table(tmp_path: Path, body: str) -> str:
    path = tmp_path / "table.odt"
    path.write_bytes(make_odt(body))
    return "\n".join(page.text for page in extract(path, FileKind.odt).pages)


def test_empty_repeated_cells_between_values_keep_the_columns_aligned(tmp_path: Path) -> None:
    header = _row(_cell("Name"), _cell("Q1"), _cell("Q2"), _cell("Q3"), _cell("Total"))
    values = _row(_cell("North"), _cell(repeat="3"), _cell("12"), _cell(repeat="16384"))
    text = _odt_table(tmp_path, _table(header, values))
    # Was "| North |  | 12 |  |  |": the three empty quarters counted as one column.
    assert "| North |  |  |  | 12 |" in text


def test_a_cell_repeated_a_million_times_is_read_up_to_the_column_cap(tmp_path: Path) -> None:
    header, values = _row(_cell("h", repeat="1048576")), _row(_cell("x", repeat="1048576"))
    text = _odt_table(tmp_path, _table(header, values))
    assert text.count("| x ") == MAX_COLUMNS


@pytest.mark.parametrize("declared", ["many", "-5", "1e9"])
def test_a_repeat_count_that_is_not_a_number_counts_once(tmp_path: Path, declared: str) -> None:
    # Was a ValueError out of the reader: "could not be read (ValueError: invalid literal...)".
    body = _table(_row(_cell("a"), _cell("b")), _row(_cell("1", repeat=declared), _cell("2")))
    spaced = f'<text:p>gap<text:s text:c="{declared}"/>here</text:p>'
    assert "| 1 | 2 |" in _odt_table(tmp_path, body + spaced)


def test_the_attacks_odt_is_refused_before_it_is_chunked(tmp_path: Path) -> None:
    path = tmp_path / "attack.odt"
    path.write_bytes(odt_with_repeated_cells())
    started = time.monotonic()
    with pytest.raises(ExtractionError) as refused:
        prepare(path, FileKind.odt, chunk_size=1000, chunk_overlap=200, page_seconds=None)
    assert time.monotonic() - started < 10
    message = str(refused.value)
    assert message.startswith("This file (4 KB) expands to 8.4 million characters of text")
    assert "remove empty or repeated rows and columns" in message


def test_text_is_bounded_by_the_file_size_plus_a_floor() -> None:
    limits = ExpansionLimits(text_ratio=20, text_floor_chars=1_000, max_chunks=10)
    assert limits.max_text_chars(100) == 3_000


def test_more_chunks_than_the_cap_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("\n\n".join(f"Paragraph {n} " + "word " * 150 for n in range(30)))
    with pytest.raises(ExtractionError, match=r"more than 10 passages\); split it"):
        prepare(
            path,
            FileKind.text,
            chunk_size=1000,
            chunk_overlap=200,
            page_seconds=None,
            expansion=ExpansionLimits(max_chunks=10),
        )


@pytest.mark.parametrize("path", READABLE, ids=lambda path: path.name)
def test_real_documents_stay_well_within_the_default_bounds(path: Path) -> None:
    prepared = prepare(
        path, KINDS[path.suffix], chunk_size=1000, chunk_overlap=200, page_seconds=None
    )
    chars = sum(len(chunk.text) for chunk in prepared.chunks)
    # A fifth of the allowance at most: the defaults are far from what real files need.
    assert chars < ExpansionLimits().max_text_chars(path.stat().st_size) / 5
