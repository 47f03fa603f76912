"""Fixture files made on the fly, with known text on known pages."""

from __future__ import annotations

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
