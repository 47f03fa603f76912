"""Every format's reader on real files (third-party fixtures made by Word, PowerPoint, Excel
and mdBook) and on files built to hurt: text in reading order, tables as Markdown with their
header, and where each part is."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pptx
import pytest
from pptx.util import Inches

from docchat.documents.filetypes import detect_kind
from docchat.extraction.chunking import chunk_document
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.kit.errors import UnsupportedMediaType
from tests.support.office_files import (
    make_docx,
    make_pptx,
    make_xlsx,
    xlsx_with_a_far_row,
    zip_bomb_docx,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "office"


def _kind_of(path: Path) -> FileKind:
    return detect_kind(path.name, path.read_bytes()[:8192], path)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("mammoth-tables.docx", FileKind.docx),
        ("python-pptx-test.pptx", FileKind.pptx),
        ("xlsx2csv-sheets.xlsx", FileKind.xlsx),
        ("xlsx2csv-test-file.csv", FileKind.csv),
        ("rustdoc-what-is-rustdoc.html", FileKind.html),
    ],
)
def test_real_files_are_recognised_by_their_content(name: str, kind: FileKind) -> None:
    assert _kind_of(FIXTURES / name) is kind


def test_an_office_file_is_known_by_its_parts_not_its_name(tmp_path: Path) -> None:
    renamed = _write(tmp_path, "slides.txt", (FIXTURES / "python-pptx-test.pptx").read_bytes())
    assert _kind_of(renamed) is FileKind.pptx
    # A ZIP that is not an Office file is still refused, with a reason.
    plain_zip = tmp_path / "report.docx"
    with zipfile.ZipFile(plain_zip, "w") as archive:
        archive.writestr("notes.txt", "just a zip")
    with pytest.raises(UnsupportedMediaType) as refused:
        _kind_of(plain_zip)
    assert "ZIP archive that is not a Word, PowerPoint, Excel" in refused.value.message


def test_word_tables_stay_tables_between_their_paragraphs() -> None:
    document = extract(FIXTURES / "mammoth-tables.docx", FileKind.docx)
    texts = [part.text for part in document.pages]
    assert texts[0] == "Above" and texts[-1] == "Below"
    table = document.pages[1]
    assert table.text == "| Top left | Top right |\n| --- | --- |\n| Bottom left | Bottom right |"
    assert table.location == "table 1, row 2"


def test_word_headings_give_each_part_its_heading_path(tmp_path: Path) -> None:
    real = extract(FIXTURES / "python-docx-known-styles.docx", FileKind.docx)
    assert [part.location for part in real.pages] == [None, "Heading 1"]

    built = make_docx(
        [
            (1, "3 Installation", ["Install the package with pip."]),
            (2, "3.1 Requirements", ["Python 3.11 and PostgreSQL 16."]),
            (2, "3.2 Proxy", ["Set HTTPS_PROXY when the machine sits behind a proxy."]),
            (1, "4 Usage", ["Run the service."]),
        ],
        table=[["Setting", "Default"], ["PORT", "8000"], ["WORKERS", "2"]],
    )
    document = extract(_write(tmp_path, "manual.docx", built), FileKind.docx)
    located = {part.location: part.text for part in document.pages}
    assert "Set HTTPS_PROXY" in located["3 Installation > 3.2 Proxy"]
    assert "Python 3.11" in located["3 Installation > 3.1 Requirements"]
    assert "| PORT | 8000 |" in located["4 Usage > table 1, rows 2-3"]
    chunks = chunk_document(document, size=1000, overlap=200)
    proxy = next(chunk for chunk in chunks if "HTTPS_PROXY" in chunk.text)
    assert proxy.location == "3 Installation > 3.2 Proxy"


def test_slides_are_located_by_number_and_title(tmp_path: Path) -> None:
    real = extract(FIXTURES / "python-pptx-test.pptx", FileKind.pptx)
    assert real.pages[0].location == "Slide 1: Presentation Title Text"
    assert "Subtitle Text" in real.pages[0].text
    tables = extract(FIXTURES / "python-pptx-tables.pptx", FileKind.pptx)
    assert tables.page_count == 3
    assert tables.pages[2].location == "Slide 3"
    assert (
        tables.pages[2].text == "| a | b | c |\n| --- | --- | --- |\n| d | e | f |\n| g | h | i |"
    )

    built = make_pptx([("Roadmap", "Ship the viewer in March"), ("Risks", "Hiring is slow")])
    deck = extract(_write(tmp_path, "deck.pptx", built), FileKind.pptx)
    assert [part.location for part in deck.pages] == ["Slide 1: Roadmap", "Slide 2: Risks"]


def test_sheets_keep_their_header_on_every_part_and_say_which_rows() -> None:
    document = extract(FIXTURES / "xlsx2csv-sheets.xlsx", FileKind.xlsx)
    assert document.page_count == 2
    locations = [part.location for part in document.pages]
    assert locations[0] == "Реестр, rows 2-6"
    assert all(location.startswith("Вариант использования, rows ") for location in locations[1:])
    header = "| № | Элемент | Описание | Результат шага (Выход) | Ссылки |"
    for part in document.pages[1:]:
        assert part.text.startswith(header)
        assert len(part.text) <= 1000  # one chunk each: rows never lose their header
    assert "| 3 | Описание | Краткое описание сути сценария |" in document.pages[1].text


def test_a_long_sheet_is_cut_into_parts_of_whole_rows(tmp_path: Path) -> None:
    rows: list[list[object]] = [["Invoice", "Customer", "Amount"]]
    rows += [[f"INV-{n:04}", f"Customer {n}", n * 10.5] for n in range(1, 201)]
    document = extract(_write(tmp_path, "invoices.xlsx", make_xlsx({"2025": rows})), FileKind.xlsx)
    assert document.pages[0].location.startswith("2025, rows 2-")
    last = document.pages[-1]
    assert last.location.endswith("-201")
    assert "| INV-0200 | Customer 200 | 2100 |" in last.text
    numbers = [int(part.location.split("-")[-1]) for part in document.pages]
    assert numbers == sorted(numbers) and len(document.pages) > 3


def test_csv_is_a_table_with_row_numbers() -> None:
    document = extract(FIXTURES / "xlsx2csv-test-file.csv", FileKind.csv)
    assert document.pages[0].location == "rows 2-44"
    assert document.pages[0].text.startswith("| A | B | C |\n| --- | --- | --- |\n")


def test_a_web_page_is_read_by_section_without_its_scripts_and_navigation() -> None:
    document = extract(FIXTURES / "rustdoc-what-is-rustdoc.html", FileKind.html)
    located = {part.location: part.text for part in document.pages}
    basic = located["What is rustdoc? > Basic usage"]
    assert "$ cargo new docs --lib\n$ cd docs" in basic  # code keeps its lines
    text = "\n".join(located.values())
    assert "function" not in text.split("fn main")[0]  # no script source before the content
    assert "toc-818727da.js" not in text


def test_markdown_headings_locate_its_parts_outside_code(tmp_path: Path) -> None:
    source = (
        "# Guide\n\nIntro.\n\n## Setup\n\n```sh\n# not a heading\npip install x\n```\n\nDone.\n"
    )
    document = extract(_write(tmp_path, "guide.md", source.encode()), FileKind.markdown)
    assert [part.location for part in document.pages] == ["Guide", "Guide > Setup"]
    assert "# not a heading" in document.pages[1].text


def test_a_note_that_is_only_headings_is_not_empty(tmp_path: Path) -> None:
    # Was "The file contains no text": headings waited for a body that never came.
    title = extract(_write(tmp_path, "mine.md", b"# Mine only"), FileKind.markdown)
    assert [(part.location, part.text) for part in title.pages] == [("Mine only", "# Mine only")]
    page = extract(_write(tmp_path, "t.html", b"<h1>Agenda</h1><h2>Monday</h2>"), FileKind.html)
    assert "Monday" in page.pages[-1].text
    with pytest.raises(ExtractionError, match="no text"):
        extract(_write(tmp_path, "empty.md", b"\n\n"), FileKind.markdown)


def test_a_zip_bomb_named_docx_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    bomb = _write(tmp_path, "bomb.docx", zip_bomb_docx(unpacked_mb=400))
    assert bomb.stat().st_size < 2 * 1024 * 1024
    with pytest.raises(ExtractionError, match="zip bomb"):
        extract(bomb, FileKind.docx)


def test_a_sheet_with_a_million_empty_rows_ends_where_its_data_does(tmp_path: Path) -> None:
    path = _write(tmp_path, "far.xlsx", xlsx_with_a_far_row())
    started = time.perf_counter()
    document = extract(path, FileKind.xlsx)
    elapsed = time.perf_counter() - started
    assert [part.location for part in document.pages] == ["Data, rows 2-3"]
    assert "far away" not in document.pages[0].text
    assert elapsed < 60  # it stopped after a run of empty rows instead of walking a million


def test_opendocument_text_keeps_its_outline_and_tables() -> None:
    assert _kind_of(FIXTURES / "odfpy-api-manual.odt") is FileKind.odt
    manual = extract(FIXTURES / "odfpy-api-manual.odt", FileKind.odt)
    located = {part.location: part.text for part in manual.pages}
    assert (
        "An OpenDocument file is essentially an XML structure"
        in (located["Introduction > About OpenDocument"])
    )
    table = extract(FIXTURES / "odfpy-simpletable.odt", FileKind.odt)
    assert (
        table.pages[0].text
        == "| Cell 1 | Cell 2 |\n| --- | --- |\n| Cell 3 (bold) | Cell 4 (italic) |"
    )


def test_an_epub_is_read_chapter_by_chapter_in_reading_order() -> None:
    book = FIXTURES / "feedbooks-war-of-the-worlds.epub"
    assert _kind_of(book) is FileKind.epub
    document = extract(book, FileKind.epub)
    chapters = [part.location for part in document.pages if part.location]
    assert chapters.index("Chapter 1 The Eve of the War") < chapters.index(
        "Chapter 2 The Falling Star"
    )
    located = {part.location: part.text for part in document.pages}
    assert "Then came the night of the first falling star" in located["Chapter 2 The Falling Star"]


def test_xml_with_entity_tricks_is_refused(tmp_path: Path) -> None:
    content = (
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">'
        "&b;</office:document-content>"
    )
    path = tmp_path / "laughs.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", content)
    assert _kind_of(path) is FileKind.odt
    with pytest.raises(ExtractionError, match="could not be read"):
        extract(path, FileKind.odt)


def test_text_inside_grouped_shapes_is_read(tmp_path: Path) -> None:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank
    group = slide.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "Budget approved in the March review"
    path = tmp_path / "grouped.pptx"
    presentation.save(str(path))
    document = extract(path, FileKind.pptx)
    assert [part.text for part in document.pages] == ["Budget approved in the March review"]
    assert document.pages[0].location == "Slide 1"
