"""Fixture files made on the fly, with known text on known pages."""

from __future__ import annotations

import zlib

from fpdf import FPDF


def make_pdf(pages: list[str]) -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def filler(topic: str, sentences: int) -> str:
    """Plain sentences about `topic`, long enough to make several chunks."""
    return " ".join(
        f"Sentence {i} of this page talks about {topic} in some detail." for i in range(sentences)
    )


def _pdf(objects: list[bytes]) -> bytes:
    """Assemble numbered objects (1-based, object 1 the catalog) into a PDF with an xref table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def deeply_nested_pdf(depth: int) -> bytes:
    """A page tree `depth` levels deep with one page at the bottom (a parser's recursion bomb)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        number = level + 2
        parent = b" /Parent %d 0 R" % (number - 1) if level else b""
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1%s >>" % (number + 1, parent))
    objects.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % (depth + 1))
    return _pdf(objects)


def page_count_bomb_pdf(claimed_pages: int) -> bytes:
    """One page object referenced over and over: a tiny file that claims a huge page count."""
    kids = b" ".join([b"3 0 R"] * claimed_pages)
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % claimed_pages,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        ]
    )


def exhausting_pdf(pages: int = 10, operations: int = 2_000_000) -> bytes:
    """Pages that all draw one compressed content stream of millions of text operations: a
    file of some 20 KB on which pypdf spends seconds per page (then hits its token limit)."""
    content = b"BT /F1 12 Tf 72 712 Td " + b"(a) Tj " * operations + b"ET"
    stream = zlib.compress(content, 9)
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream",
            *[page] * pages,
        ]
    )
