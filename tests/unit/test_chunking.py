from __future__ import annotations

from docchat.extraction.chunking import chunk_document
from docchat.extraction.reader import ExtractedDocument, PageText


def test_chunks_keep_pages_and_run_one_index() -> None:
    document = ExtractedDocument(
        pages=[PageText(1, "alpha " * 300), PageText(2, ""), PageText(3, "gamma " * 50)],
        page_count=3,
    )
    chunks = chunk_document(document, size=1000, overlap=200)
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    assert {chunk.page for chunk in chunks} == {1, 3}
    assert all(len(chunk.text) <= 1000 for chunk in chunks)
    page_one = [chunk for chunk in chunks if chunk.page == 1]
    assert len(page_one) == 3  # 1800 characters at a stride of 800
    # Consecutive chunks of a page overlap.
    assert page_one[0].text[-100:].strip().split()[-1] in page_one[1].text


def test_titles_come_from_file_names() -> None:
    from docchat.extraction.chunking import title_of, with_header

    assert title_of("Annual_report-2024.pdf") == "Annual report 2024"
    assert title_of("notes") == "notes"
    assert title_of(".env") == ".env"
    assert (
        with_header("Zephyr bridge", "It opened in 1932.") == "Zephyr bridge\n\nIt opened in 1932."
    )
    assert with_header("", "text") == "text"
