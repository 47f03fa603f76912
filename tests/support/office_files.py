"""Office files built by the real libraries (python-docx, python-pptx, openpyxl), and hostile
ones built by hand, for tests that need content they can ask about."""

from __future__ import annotations

import io
import zipfile

import docx
import openpyxl
import pptx

MB = 1024 * 1024


def make_docx(
    sections: list[tuple[int, str, list[str]]], table: list[list[str]] | None = None
) -> bytes:
    """(heading level, heading, paragraphs) sections; a table after the last one."""
    document = docx.Document()
    for level, heading, paragraphs in sections:
        document.add_heading(heading, level=level)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for cells, row in zip(table, grid.rows, strict=True):
            for text, cell in zip(cells, row.cells, strict=True):
                cell.text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_pptx(slides: list[tuple[str, str]]) -> bytes:
    """(title, body) per slide, on the title-and-content layout."""
    presentation = pptx.Presentation()
    layout = presentation.slide_layouts[1]
    for title, body in slides:
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def make_xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    workbook = openpyxl.Workbook()
    for sheet in list(workbook.worksheets):
        workbook.remove(sheet)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def zip_bomb_docx(unpacked_mb: int = 400) -> bytes:
    """A ZIP named like a Word file whose main part unpacks to `unpacked_mb` of zeros."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            zeros = b"\0" * MB
            for _ in range(unpacked_mb):
                part.write(zeros)
    return out.getvalue()


def xlsx_with_a_far_row(last_row: int = 1_048_576) -> bytes:
    """A real workbook with a few rows, then one cell on the sheet's last row: a reader that
    walks every row in between walks a million empty ones."""
    built = make_xlsx({"Data": [["name", "amount"], ["alpha", 1], ["beta", 2]]})
    source = zipfile.ZipFile(io.BytesIO(built))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                cell = f'<c r="A{last_row}" t="inlineStr"><is><t>far away</t></is></c>'
                far = f'<row r="{last_row}">{cell}</row>'
                data = data.replace(b"</sheetData>", far.encode() + b"</sheetData>")
                data = data.replace(b'ref="A1:B3"', f'ref="A1:B{last_row}"'.encode())
            archive.writestr(item, data)
    return out.getvalue()


def make_epub(chapters: list[tuple[str, str]]) -> bytes:
    """A minimal EPUB 3 (mimetype first, container, package, one XHTML file per chapter)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        items = "".join(
            f'<item id="c{n}" href="text/c{n}.xhtml" media-type="application/xhtml+xml"/>'
            for n in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
        archive.writestr(
            "OEBPS/book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for n, (title, text) in enumerate(chapters):
            archive.writestr(
                f"OEBPS/text/c{n}.xhtml",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                f"<title>{title}</title></head><body><h1>{title}</h1><p>{text}</p></body></html>",
            )
    return out.getvalue()


ODF_NAMESPACES = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
)


def make_odt(body: str) -> bytes:
    """An OpenDocument text whose `office:text` holds `body` (XML with the office, text and
    table prefixes)."""
    content = (
        f'<?xml version="1.0"?><office:document-content {ODF_NAMESPACES}>'
        f"<office:body><office:text>{body}</office:text></office:body>"
        "</office:document-content>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr("content.xml", content)
    return out.getvalue()


def odt_with_repeated_cells(rows: int = 5_000) -> bytes:
    """The attack's shape: a table whose every row is one cell of text declared repeated a
    thousand columns (then the sheet's width of empty ones), and a million empty rows. Some
    tens of kilobytes; read naively, about ten thousand chunks."""
    row = (
        "<table:table-row>"
        '<table:table-cell table:number-columns-repeated="1000"><text:p>overflow</text:p>'
        '</table:table-cell><table:table-cell table:number-columns-repeated="16384"/>'
        "</table:table-row>"
    )
    empty = (
        '<table:table-row table:number-rows-repeated="1048576">'
        "<table:table-cell/></table:table-row>"
    )
    return make_odt(f"<text:p>Totals</text:p><table:table>{row * rows}{empty}</table:table>")


def replace_part(package: bytes, name: str, data: bytes | None) -> bytes:
    """`package` (a ZIP) with the part `name` replaced by `data` (None: removed)."""
    source = zipfile.ZipFile(io.BytesIO(package))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in source.infolist():
            if item.filename != name:
                archive.writestr(item, source.read(item.filename))
            elif data is not None:
                archive.writestr(item, data)
    return out.getvalue()
