"""Inline mode: answer from a document that is not indexed yet by reading its text directly.

The text is chunked exactly as the worker will chunk it, so the chunk ids in the sources stay
valid once the document is indexed. Blocking (extraction): run it in a thread.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path

from docchat.documents.filetypes import FileKind
from docchat.ingestion.chunking import chunk_document
from docchat.ingestion.extraction import ExtractionError, extract
from docchat.retrieval.context import CHARS_PER_TOKEN
from docchat.retrieval.schemas import PREVIEW_CHARS, Source


@dataclass(frozen=True)
class InlineDocument:
    id: uuid.UUID
    filename: str
    kind: FileKind
    path: Path


@dataclass(frozen=True)
class InlinePassage:
    text: str
    source: Source


def read_passages(
    document: InlineDocument, *, chunk_size: int, chunk_overlap: int, budget_tokens: int
) -> list[InlinePassage]:
    """The document's chunks in reading order, as many as fit the budget ([] if unreadable)."""
    try:
        extracted = extract(document.path, document.kind)
    except ExtractionError:
        return []
    passages: list[InlinePassage] = []
    remaining = budget_tokens * CHARS_PER_TOKEN
    for chunk in chunk_document(extracted, size=chunk_size, overlap=chunk_overlap):
        if len(chunk.text) > remaining:
            break
        remaining -= len(chunk.text)
        source = Source(
            document_id=document.id,
            document_name=document.filename,
            chunk_id=f"{document.id}_{chunk.index}",
            page=chunk.page,
            similarity=None,
            content_preview=chunk.text[:PREVIEW_CHARS],
        )
        passages.append(InlinePassage(chunk.text, source))
    return passages


def file_part(document: InlineDocument) -> dict[str, object]:
    """An OpenAI `file` content part carrying the PDF itself, base64-encoded."""
    data = base64.b64encode(document.path.read_bytes()).decode()
    return {
        "type": "file",
        "file": {"filename": document.filename, "file_data": f"data:application/pdf;base64,{data}"},
    }


def file_source(document: InlineDocument) -> Source:
    return Source(
        document_id=document.id,
        document_name=document.filename,
        chunk_id=f"{document.id}_file",
        page=None,
        similarity=None,
        content_preview="",
    )
