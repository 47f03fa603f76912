"""Tables drawn on PDF pages (`extraction.pdf_tables`): rows under their header, located by
page, table and rows; figures' lines, text-only pages and pages of many tables keep pypdf's
text."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF
from pypdf import PdfReader

from docchat.extraction import pdf_tables
from docchat.extraction.chunking import chunk_document
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pdf"
HARBOUR_FEES = FIXTURES / "libreoffice-harbour-fees-table.pdf"


def test_a_table_libreoffice_drew_is_read_as_rows_under_their_header() -> None:
    document = extract(HARBOUR_FEES, FileKind.pdf)
    located = [(page.page, page.location) for page in document.pages]
    assert located == [(1, None), (1, "table 1, rows 2-5"), (1, None)]
    before, table, after = (page.text for page in document.pages)
    assert before.startswith("Harbour fees 2026") and "per night" in before
    assert table.splitlines()[0] == "| Berth | Length | Fee per night | Electricity |"
    assert "| South quay | up to 15 m | EUR 42 | EUR 4 per day |" in table.splitlines()
    assert after.startswith("Payment is due on arrival") and "08:00 to 18:00" in after
    # Each row once: the table's cells are not in the paragraphs' text too.
    assert not any("South quay" in text for text in (before, after))


def test_a_table_s_chunks_keep_its_page_and_rows() -> None:
    chunks = chunk_document(extract(HARBOUR_FEES, FileKind.pdf), size=1000, overlap=200)
    table = [chunk for chunk in chunks if chunk.location]
    assert [(chunk.page, chunk.location) for chunk in table] == [(1, "table 1, rows 2-5")]
    assert table[0].text.startswith("| Berth |")


def _pdf(path: Path, draw: object) -> Path:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, "A page of text above a drawing, long enough to be real text.")
    draw(pdf)  # type: ignore[operator]
    pdf.output(str(path))
    return path


def test_a_figure_s_grid_is_no_table(tmp_path: Path) -> None:
    def grid(pdf: FPDF) -> None:
        for step in range(0, 100, 10):
            pdf.line(20 + step, 60, 20 + step, 150)
            pdf.line(20, 60 + step, 110, 60 + step)
        pdf.text(22, 66, "x")

    path = _pdf(tmp_path / "plot.pdf", grid)
    document = extract(path, FileKind.pdf)
    assert [page.location for page in document.pages] == [None]
    assert "A page of text above a drawing" in document.pages[0].text


def test_a_page_of_more_tables_than_a_page_holds_keeps_its_plain_text(tmp_path: Path) -> None:
    def tiny_tables(pdf: FPDF) -> None:
        pdf.set_font("helvetica", size=5)
        for index in range(pdf_tables.MAX_TABLES_PER_PAGE + 5):
            x, y = 12 + (index % 5) * 38, 40 + (index // 5) * 22
            for row in range(2):
                for column in range(2):
                    pdf.set_xy(x + column * 17, y + row * 6)
                    pdf.cell(17, 6, f"cell {index}.{row}{column}", border=1)

    path = _pdf(tmp_path / "tiles.pdf", tiny_tables)
    document = extract(path, FileKind.pdf)
    assert [page.location for page in document.pages] == [None]
    assert "cell 0.00" in document.pages[0].text


def test_a_text_only_page_is_never_opened_by_the_table_reader(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "text.pdf", lambda pdf: None)
    tables = pdf_tables.PdfTables(path)
    page = PdfReader(path).pages[0]
    assert not pdf_tables.draws_rules(page)
    assert tables.page_parts(page, 1) is None and tables._pdf is None


class _Found:
    def __init__(self, rows: list[list[str | None]]) -> None:
        self.rows = rows

    def extract(self) -> list[list[str | None]]:
        return self.rows


def test_a_figure_s_labels_in_a_box_are_no_table() -> None:
    """As pdfplumber finds on a real lecture script's plot: a column empty throughout, glyphs
    with no Unicode value read as "(cid:0)"."""
    found = _Found([["", "X 2 (x ;y ) (cid:0) 1 1 2 2 X 1"], [None, "x x 1 2 U X (cid:0) 2 2"]])
    rows = pdf_tables._rows(found)
    assert rows == [["X 2 (x ;y ) 1 1 2 2 X 1"], ["x x 1 2 U X 2 2"]]
    assert not pdf_tables._is_table(rows)


def test_tables_are_read_no_longer_than_the_document_s_time_for_them() -> None:
    page = PdfReader(HARBOUR_FEES).pages[0]
    spent = pdf_tables.PdfTables(HARBOUR_FEES, budget_seconds=0.001)
    try:
        assert spent.page_parts(page, 1) is not None  # the first page with rules spends it
        assert spent.page_parts(page, 1) is None  # then pages keep their plain text
    finally:
        spent.close()


NICS = FIXTURES / "fbi-nics-background-checks-2015-11.pdf"


def test_a_government_report_s_table_reads_one_row_per_state_under_one_label_per_column() -> None:
    """The FBI's report rules a line under every fifth state, titles the table in one cell
    across it, and groups its columns under labels with no rule between them."""
    tables = [page for page in extract(NICS, FileKind.pdf).pages if page.location]
    caption, header = tables[0].text.splitlines()[:2]
    assert caption == "NICS Firearm Background Checks November - 2015"
    labels = [cell.strip() for cell in header.strip("|").split("|")]
    assert labels[:4] == ["State / Territory", "Permit", "Handgun", "Long Gun"]
    assert "Pre-Pawn Long Gun" in labels and "Returned/Disposition *Other" in labels
    assert labels[-1] == "Totals"
    text = "\n".join(page.text for page in tables)
    kentucky = next(line for line in text.splitlines() if line.startswith("| Kentucky |"))
    assert kentucky.startswith("| Kentucky | 264,140 | 12,155 | 14,847 |")
    assert kentucky.endswith("| 295,891 |")
    assert "| Totals | 804,006 |" in text


def test_a_cell_of_one_wrapped_phrase_is_one_row() -> None:
    row = ["Harbour dues for a\nlong stay", "EUR 40"]
    assert pdf_tables._unstacked(row) == [row]


def test_cells_of_as_many_lines_each_are_the_rows_drawn_in_one() -> None:
    row = ["Alabama\nAlaska\nArizona", "18,870\n209\n2,303", None, ""]
    assert pdf_tables._unstacked(row) == [
        ["Alabama", "18,870", None, ""],
        ["Alaska", "209", None, ""],
        ["Arizona", "2,303", None, ""],
    ]


def test_framed_sections_of_lines_beside_charts_are_no_table() -> None:
    """The USDA's report frames each group of price lines and its chart: as a "table", each
    frame would be one cell of lines and the chart's labels another."""
    document = extract(FIXTURES / "usda-ag-energy-round-up-2017-02-24.pdf", FileKind.pdf)
    assert [page.location for page in document.pages] == [None]
    assert "Iowa 1.35 - 1.42 1.38 - 1.43 1.27 - 1.35 Iowa Ethanol" in document.pages[0].text
