"""A document's own date, read at extraction from files built here by the real libraries (or
by hand where a library cannot write what a hostile file holds): PDF metadata, Office and
OpenDocument properties, EPUB metadata, HTML meta tags. A date that cannot be read is no date,
never a failed document."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import docx
import pptx
import pytest
from pypdf import PdfReader, PdfWriter

from docchat.extraction import dates
from docchat.extraction.formats import extract
from docchat.extraction.kinds import FileKind
from docchat.extraction.office import office_date
from docchat.extraction.sandbox import prepare
from tests.support.files import make_pdf
from tests.support.office_files import make_epub, make_odt, make_xlsx, replace_part

TEXT = "The harbour ferry leaves at nine every morning and returns at six in the evening."
APRIL = dt.date(2023, 4, 1)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _pdf_with(metadata: dict[str, str]) -> bytes:
    """A PDF of one page of text whose information dictionary holds `metadata` and nothing
    else, as pypdf's writer writes it (any string: a hostile file's too)."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([TEXT]))))
    writer.metadata = metadata  # fpdf's own creation date goes
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# -- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("D:20230401093000+02'00'", APRIL),
        ("D:20230401", APRIL),
        ("20230401120000Z", APRIL),  # no D: prefix, as many writers write it
        ("D:2023", None),  # a year is not a day
        ("D:20231345", None),  # no 45th of the 13th month
        ("D:99990101", None),  # in the future
        ("D:18500101", None),  # before any digital document
        ("yesterday", None),
        ("", None),
        ("D:" + "9" * 10_000, None),
    ],
)
def test_pdf_dates(value: str, expected: dt.date | None) -> None:
    assert dates.pdf_date(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-04-01", APRIL),
        ("2023-04-01T23:30:00-05:00", APRIL),  # the day as the writer wrote it
        ("2023-04-01T09:30:00Z", APRIL),
        (" 2023-04-01 ", APRIL),
        ("2023-04", None),
        ("2023", None),
        ("2023-02-30", None),
        ("20230401", None),
        ("2023-04-011", None),
    ],
)
def test_iso_dates(value: str, expected: dt.date | None) -> None:
    assert dates.iso_date(value) == expected


def test_http_and_other_dates() -> None:
    assert dates.http_date("Sat, 01 Apr 2023 09:30:00 GMT") == APRIL
    assert dates.http_date("Sat, 01 Apr 2023 23:30:00 -0500") == dt.date(2023, 4, 2)  # UTC
    assert dates.http_date("not a date") is None and dates.http_date(None) is None
    assert dates.any_date("Sat, 01 Apr 2023 09:30:00 GMT") == APRIL
    assert dates.any_date("2023-04-01T10:00:00+02:00") == APRIL
    assert dates.timestamp_date(1680307200.0) == APRIL
    assert dates.timestamp_date(1e20) is None
    assert dates.moment_date(dt.datetime(2023, 4, 1, 12, tzinfo=dt.UTC)) == APRIL


# -- PDF ------------------------------------------------------------------------------------


def test_a_pdf_is_dated_by_its_modification_date_else_its_creation(tmp_path: Path) -> None:
    both = _pdf_with({"/ModDate": "D:20230401093000+02'00'", "/CreationDate": "D:20190101"})
    assert extract(_write(tmp_path, "a.pdf", both), FileKind.pdf).document_date == APRIL
    created = _pdf_with({"/CreationDate": "D:20190102000000Z"})
    path = _write(tmp_path, "b.pdf", created)
    assert extract(path, FileKind.pdf).document_date == dt.date(2019, 1, 2)


def test_a_pdf_without_dates_has_none(tmp_path: Path) -> None:
    path = _write(tmp_path, "plain.pdf", _pdf_with({"/Title": "No dates"}))
    assert extract(path, FileKind.pdf).document_date is None
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([TEXT]))))
    writer.metadata = None  # no information dictionary at all
    out = io.BytesIO()
    writer.write(out)
    assert extract(_write(tmp_path, "bare.pdf", out.getvalue()), FileKind.pdf).document_date is None


@pytest.mark.parametrize(
    "bad",
    ["D:2023-13-45", "D:99999999999999", "\x00\xff)(\\", "D:", "(((" * 1000, "D:00000000"],
)
def test_a_malformed_pdf_date_is_no_date_and_the_text_still_counts(
    tmp_path: Path, bad: str
) -> None:
    """pypdf's own `modification_date` raises on these; the reader never asks it."""
    data = _pdf_with({"/ModDate": bad, "/CreationDate": bad})
    path = _write(tmp_path, "hostile.pdf", data)
    prepared = prepare(path, FileKind.pdf, chunk_size=800, chunk_overlap=100, page_seconds=5)
    assert prepared.document_date is None
    assert "harbour ferry" in prepared.chunks[0].text


def test_a_bad_modification_date_falls_back_to_the_creation_date(tmp_path: Path) -> None:
    data = _pdf_with({"/ModDate": "D:2023-garbage", "/CreationDate": "D:20230401"})
    path = _write(tmp_path, "half.pdf", data)
    prepared = prepare(path, FileKind.pdf, chunk_size=800, chunk_overlap=100, page_seconds=5)
    assert prepared.document_date == APRIL


# -- Office Open XML ------------------------------------------------------------------------


def _core(modified: str | None, created: str | None) -> bytes:
    """A `docProps/core.xml` as Office writes it."""
    fields = ""
    if created is not None:
        fields += f'<dcterms:created xsi:type="dcterms:W3CDTF">{created}</dcterms:created>'
    if modified is not None:
        fields += f'<dcterms:modified xsi:type="dcterms:W3CDTF">{modified}</dcterms:modified>'
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:creator>Ada</dc:creator>{fields}</cp:coreProperties>"
    ).encode()


def test_a_word_file_is_dated_by_its_core_properties(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph(TEXT)
    document.core_properties.modified = dt.datetime(2023, 4, 1, 9, 30)
    document.core_properties.created = dt.datetime(2019, 1, 1)
    out = io.BytesIO()
    document.save(out)
    path = _write(tmp_path, "a.docx", out.getvalue())
    assert extract(path, FileKind.docx).document_date == APRIL

    created_only = replace_part(
        out.getvalue(), "docProps/core.xml", _core(None, "2019-01-02T00:00:00Z")
    )
    path = _write(tmp_path, "b.docx", created_only)
    assert extract(path, FileKind.docx).document_date == dt.date(2019, 1, 2)


def test_powerpoint_and_excel_files_are_dated_too(tmp_path: Path) -> None:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Ferries"
    slide.placeholders[1].text = TEXT
    presentation.core_properties.modified = dt.datetime(2023, 4, 1, 12)
    out = io.BytesIO()
    presentation.save(out)
    assert extract(_write(tmp_path, "a.pptx", out.getvalue()), FileKind.pptx).document_date == APRIL

    # openpyxl writes the time it saves as the modification: the part is written by hand.
    workbook = make_xlsx({"Ferries": [["Leaves", "Returns"], ["9:00", "18:00"]]})
    dated = replace_part(workbook, "docProps/core.xml", _core("2023-04-01T08:00:00Z", None))
    assert extract(_write(tmp_path, "a.xlsx", dated), FileKind.xlsx).document_date == APRIL


@pytest.mark.parametrize(
    "core",
    [_core("the day before yesterday", "not a date either"), _core("9999-01-01T00:00:00Z", None)],
)
def test_office_dates_that_are_none_are_no_date(tmp_path: Path, core: bytes) -> None:
    document = docx.Document()
    document.add_paragraph(TEXT)
    out = io.BytesIO()
    document.save(out)
    path = _write(tmp_path, "a.docx", replace_part(out.getvalue(), "docProps/core.xml", core))
    extracted = extract(path, FileKind.docx)
    assert extracted.document_date is None and TEXT in extracted.pages[0].text


@pytest.mark.parametrize(
    "core",
    [
        b"<not xml",
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>',
        b"<x>" + b"<y>" * 100_000 + b"</x>",
        b"<x/>" + b" " * (2 * 1024 * 1024),  # larger than any properties part
        None,  # no properties at all
    ],
)
def test_unreadable_office_properties_are_no_date(tmp_path: Path, core: bytes | None) -> None:
    """(Some libraries refuse such a file on their own: whether it is read is theirs to say;
    its date never makes it fail.)"""
    workbook = make_xlsx({"Ferries": [["Leaves", "Returns"], ["9:00", "18:00"]]})
    path = _write(tmp_path, "a.xlsx", replace_part(workbook, "docProps/core.xml", core))
    assert office_date(path) is None


# -- OpenDocument ---------------------------------------------------------------------------


def _with_part(package: bytes, name: str, data: str) -> bytes:
    out = io.BytesIO(package)
    with zipfile.ZipFile(out, "a") as archive:
        archive.writestr(name, data)
    return out.getvalue()


def _odf_meta(fields: str) -> str:
    return (
        '<?xml version="1.0"?><office:document-meta '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<office:meta>{fields}</office:meta></office:document-meta>"
    )


def test_an_opendocument_file_is_dated_by_its_meta(tmp_path: Path) -> None:
    body = f"<text:p>{TEXT}</text:p>"
    saved = _odf_meta(
        "<meta:creation-date>2019-01-01T10:00:00</meta:creation-date>"
        "<dc:date>2023-04-01T11:00:00.123456789</dc:date>"
    )
    path = _write(tmp_path, "a.odt", _with_part(make_odt(body), "meta.xml", saved))
    assert extract(path, FileKind.odt).document_date == APRIL

    created = _odf_meta("<meta:creation-date>2019-01-02T10:00:00</meta:creation-date>")
    path = _write(tmp_path, "b.odt", _with_part(make_odt(body), "meta.xml", created))
    assert extract(path, FileKind.odt).document_date == dt.date(2019, 1, 2)
    assert extract(_write(tmp_path, "c.odt", make_odt(body)), FileKind.odt).document_date is None


# -- EPUB -----------------------------------------------------------------------------------


def _epub_with(metadata: str) -> bytes:
    book = make_epub([("Ferries", TEXT)])
    package = zipfile.ZipFile(io.BytesIO(book)).read("OEBPS/book.opf").decode()
    package = package.replace(
        "<manifest>",
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/" '
        f'xmlns:opf="http://www.idpf.org/2007/opf">{metadata}</metadata><manifest>',
    )
    return replace_part(book, "OEBPS/book.opf", package.encode())


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ("<dc:date>2023-04-01</dc:date>", APRIL),
        # EPUB 3: the book's date before its package's last modification.
        (
            '<meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>'
            "<dc:date>2023-04-01T00:00:00Z</dc:date>",
            APRIL,
        ),
        ('<meta property="dcterms:modified">2023-04-01T00:00:00Z</meta>', APRIL),
        # EPUB 2: the publication event before the others.
        (
            '<dc:date opf:event="modification">2024-05-05</dc:date>'
            '<dc:date opf:event="publication">2023-04-01</dc:date>',
            APRIL,
        ),
        ("<dc:date>2023</dc:date>", None),
        ("<dc:date>soon</dc:date>", None),
        ("", None),
    ],
)
def test_an_epub_is_dated_by_its_publication(
    tmp_path: Path, metadata: str, expected: dt.date | None
) -> None:
    path = _write(tmp_path, "book.epub", _epub_with(metadata))
    extracted = extract(path, FileKind.epub)
    assert extracted.document_date == expected and TEXT in extracted.pages[0].text


# -- HTML -----------------------------------------------------------------------------------


def _page(head: str) -> bytes:
    return (
        f"<html><head><title>Ferries</title>{head}</head><body><p>{TEXT}</p></body></html>".encode()
    )


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('<meta property="article:published_time" content="2023-04-01T08:00:00+00:00">', APRIL),
        ('<meta name="date" content="2023-04-01" />', APRIL),
        ('<meta name="DCTERMS.date" content="2023-04-01">', APRIL),
        ('<meta http-equiv="last-modified" content="Sat, 01 Apr 2023 09:30:00 GMT">', APRIL),
        # Last changed before first published.
        (
            '<meta property="article:published_time" content="2020-01-01">'
            '<meta property="article:modified_time" content="2023-04-01T10:00:00Z">',
            APRIL,
        ),
        # A malformed date is passed over for the next one.
        (
            '<meta name="last-modified" content="whenever"><meta name="date" content="2023-04-01">',
            APRIL,
        ),
        ('<meta name="description" content="2023-04-01">', None),
        ('<meta name="date" content="">', None),
        ("", None),
    ],
)
def test_an_html_page_is_dated_by_its_meta_tags(
    tmp_path: Path, head: str, expected: dt.date | None
) -> None:
    extracted = extract(_write(tmp_path, "page.html", _page(head)), FileKind.html)
    assert extracted.document_date == expected
    assert TEXT in extracted.pages[0].text and "2023" not in extracted.pages[0].text


def test_formats_without_a_date_have_none(tmp_path: Path) -> None:
    path = _write(tmp_path, "notes.md", f"# Ferries\n\n{TEXT}\n".encode())
    assert extract(path, FileKind.markdown).document_date is None
    path = _write(tmp_path, "notes.txt", TEXT.encode())
    assert extract(path, FileKind.text).document_date is None
