"""Split extracted pages into overlapping chunks; every chunk keeps its page (or location)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

from docchat.extraction.reader import ExtractedDocument

SEPARATORS = ["\n\n", "\n", " ", ""]


@dataclass(frozen=True)
class TextChunk:
    index: int
    page: int | None
    text: str
    location: str | None = None


def title_of(filename: str) -> str:
    """A document's title from its file name: `Annual_report-2024.pdf` -> `Annual report 2024`."""
    stem = filename.rsplit(".", 1)[0] if "." in filename.strip(".") else filename
    return " ".join(stem.replace("_", " ").replace("-", " ").split())


def with_header(title: str, text: str) -> str:
    """What is embedded and indexed for a chunk when chunk headers are on (RAG_CHUNK_HEADER)."""
    return f"{title}\n\n{text}" if title else text


def indexed_text(filename: str, text: str, *, header: bool) -> str:
    """What the embedder and BM25 see of a chunk of the file `filename`: with `header`
    (RAG_CHUNK_HEADER), the document's title first, so a passage that never names its subject
    is still found by it."""
    return with_header(title_of(filename), text) if header else text


def chunk_document(document: ExtractedDocument, *, size: int, overlap: int) -> list[TextChunk]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, separators=SEPARATORS
    )
    chunks: list[TextChunk] = []
    for page in document.pages:
        for piece in splitter.split_text(page.text):
            if piece.strip():
                chunks.append(
                    TextChunk(index=len(chunks), page=page.page, text=piece, location=page.location)
                )
    return chunks
