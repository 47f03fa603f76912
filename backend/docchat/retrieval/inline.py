"""Inline mode: answer from a document that is not indexed yet by reading its text directly.

The worker writes a document's chunk text as soon as it has read the file, so most of the
time inline mode only reads those rows. Before that, the file is read here, in a sandbox of
its own with a short time limit (never in the request's threads): a file that cannot be read
in time gives no passages and is not tried again for a while. Either way the chunks are the
worker's own, so the chunk ids in the sources stay valid once the document is indexed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from docchat.extraction.kinds import FileKind
from docchat.extraction.reader import ExtractionError
from docchat.extraction.sandbox import ExtractionSandbox
from docchat.kit.errors import NotFound
from docchat.retrieval.context import TokenBudget
from docchat.retrieval.highlight import preview_of
from docchat.retrieval.index import DocumentRef
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.passage_identity import HEADER_CHARS
from docchat.retrieval.schemas import Source

logger = logging.getLogger(__name__)
# A file that could not be read inline is not tried again (inline) for this long.
RETRY_AFTER_SECONDS = 600.0


class StoredFiles(Protocol):
    """Where uploaded files are kept (`documents.storage.FileStorage`)."""

    def local_copy(self, key: str) -> contextlib.AbstractAsyncContextManager[Path]: ...


@dataclass(frozen=True)
class InlineDocument:
    id: uuid.UUID
    owner_id: uuid.UUID
    filename: str
    kind: FileKind
    storage: StoredFiles
    storage_key: str
    sha256: str
    version: int = 1

    def local_copy(self) -> contextlib.AbstractAsyncContextManager[Path]:
        return self.storage.local_copy(self.storage_key)


@dataclass(frozen=True)
class InlinePassage:
    text: str
    source: Source


@dataclass(frozen=True)
class _Piece:
    index: int
    page: int | None
    text: str
    location: str | None = None


@dataclass
class InlineReader:
    sandbox: ExtractionSandbox
    chunk_size: int
    chunk_overlap: int
    timeout_seconds: float
    _unreadable: dict[str, float] = field(default_factory=dict)

    def _recently_failed(self, sha256: str) -> bool:
        failed_at = self._unreadable.get(sha256)
        return failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS

    async def _read(self, document: InlineDocument) -> list[_Piece]:
        if self._recently_failed(document.sha256):
            return []
        try:
            async with document.local_copy() as path:
                prepared = await self.sandbox.prepare(
                    path,
                    document.kind,
                    chunk_size=self.chunk_size,
                    chunk_overlap=self.chunk_overlap,
                    queue_seconds=self.timeout_seconds,
                )
        except NotFound:  # the stored file is gone
            logger.warning("document %s has no stored file to read inline", document.id)
            return []
        except (ExtractionError, TimeoutError) as exc:
            logger.warning("document %s could not be read inline: %s", document.id, exc)
            if isinstance(exc, ExtractionError):
                self._unreadable[document.sha256] = time.monotonic()
            return []
        return [
            _Piece(chunk.index, chunk.page, chunk.text, chunk.location) for chunk in prepared.chunks
        ]

    async def _pieces(self, document: InlineDocument, lexical: LexicalIndex) -> list[_Piece]:
        """The worker's chunks once it has read the file, else a reading of our own."""
        stored = await lexical.document_chunks([DocumentRef.of(document)])
        if stored:
            return [
                _Piece(chunk.chunk_index, chunk.page, chunk.text, chunk.location)
                for chunk in stored
            ]
        return await self._read(document)

    async def passages(
        self, document: InlineDocument, lexical: LexicalIndex, budget: TokenBudget
    ) -> list[InlinePassage]:
        """The document's chunks in reading order, as many as `budget` takes ([] if unreadable)."""
        passages: list[InlinePassage] = []
        for piece in await self._pieces(document, lexical):
            if not budget.take(piece.text, header=HEADER_CHARS):
                break
            source = Source(
                document_id=document.id,
                document_name=document.filename,
                chunk_id=f"{document.id}_{piece.index}",
                page=piece.page,
                location=piece.location,
                similarity=None,
                content_preview=preview_of(piece.text),
            )
            passages.append(InlinePassage(piece.text, source))
        return passages


async def file_part(document: InlineDocument) -> dict[str, object]:
    """An OpenAI `file` content part carrying the PDF itself, base64-encoded."""
    async with document.local_copy() as path:
        data = base64.b64encode(await asyncio.to_thread(path.read_bytes)).decode()
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
