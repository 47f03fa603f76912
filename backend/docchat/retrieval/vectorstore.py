"""The vector-store edge (ChromaDB), one collection for every user's chunks.

Contract of `VectorStore`:
- `upsert(chunks, embeddings)` stores chunks under their ids (`{document_id}_{chunk_index}`),
  replacing any with the same id;
- `delete_document(document_id)` removes every chunk of that document;
- `query(embedding, document_ids, top_k)` returns at most `top_k` chunks whose `document_id`
  is in `document_ids` (never any other), most similar first, with cosine similarity;
- calls are blocking; raise `VectorStoreUnavailable` when the store cannot serve.
Access control is the caller's job: `document_ids` must come from the owner-scoped query.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import chromadb
from chromadb.config import Settings as ChromaSettings

logger = logging.getLogger(__name__)


class VectorStoreUnavailable(Exception):
    """The store cannot answer (down, unreadable, or built by another embedding model)."""


@dataclass(frozen=True)
class Chunk:
    document_id: uuid.UUID
    chunk_index: int
    text: str
    page: int | None
    owner_id: uuid.UUID
    visibility: str
    filename: str

    @property
    def id(self) -> str:
        return chunk_id(self.document_id, self.chunk_index)


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    similarity: float


def chunk_id(document_id: uuid.UUID, chunk_index: int) -> str:
    return f"{document_id}_{chunk_index}"


class VectorStore(Protocol):
    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None: ...

    def delete_document(self, document_id: uuid.UUID) -> None: ...

    def query(
        self, embedding: Sequence[float], document_ids: Sequence[uuid.UUID], top_k: int
    ) -> list[ScoredChunk]: ...

    def count(self, document_id: uuid.UUID | None = None) -> int: ...

    def ping(self) -> None: ...


def _metadata(chunk: Chunk) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "document_id": str(chunk.document_id),
        "chunk_index": chunk.chunk_index,
        "owner_id": str(chunk.owner_id),
        "visibility": chunk.visibility,
        "filename": chunk.filename,
    }
    if chunk.page is not None:
        metadata["page"] = chunk.page
    return metadata


def _chunk_from(text: str, metadata: dict[str, Any]) -> Chunk:
    page = metadata.get("page")
    return Chunk(
        document_id=uuid.UUID(str(metadata["document_id"])),
        chunk_index=int(metadata["chunk_index"]),
        text=text,
        page=int(page) if page is not None else None,
        owner_id=uuid.UUID(str(metadata["owner_id"])),
        visibility=str(metadata["visibility"]),
        filename=str(metadata["filename"]),
    )


def _document_filter(document_ids: Sequence[uuid.UUID]) -> dict[str, Any]:
    ids = [str(document_id) for document_id in document_ids]
    return {"document_id": ids[0]} if len(ids) == 1 else {"document_id": {"$in": ids}}


class ChromaVectorStore:
    def __init__(
        self,
        *,
        collection: str,
        embedding_model: str,
        dimension: int,
        path: Path | None = None,
        url: str | None = None,
    ) -> None:
        settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if url:
            parsed = urlparse(url)
            self._client = chromadb.HttpClient(
                host=parsed.hostname or "localhost",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        else:
            assert path is not None, "a folder is needed without CHROMA_URL"
            path.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(path=str(path), settings=settings)
        self.embedding_model = embedding_model
        self.dimension = dimension
        self._collection_name = collection
        self._lock = threading.Lock()
        self.mismatch: str | None = None
        self._collection = self._client.get_or_create_collection(
            collection,
            embedding_function=None,
            metadata={
                "hnsw:space": "cosine",
                "embedding_model": embedding_model,
                "dimension": dimension,
            },
        )
        self._check_model()

    def _check_model(self) -> None:
        recorded = self._collection.metadata or {}
        model, dimension = recorded.get("embedding_model"), recorded.get("dimension")
        if (model, dimension) != (self.embedding_model, self.dimension):
            self.mismatch = (
                f"The vector index was built with {model} ({dimension} dimensions) but the "
                f"configured embedder is {self.embedding_model} ({self.dimension}); "
                "run `docchat reindex` to rebuild it"
            )
            logger.error(self.mismatch)

    def _usable(self) -> Any:
        if self.mismatch:
            raise VectorStoreUnavailable(self.mismatch)
        return self._collection

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None:
        if not chunks:
            return
        try:
            self._usable().upsert(
                ids=[chunk.id for chunk in chunks],
                embeddings=[list(vector) for vector in embeddings],
                documents=[chunk.text for chunk in chunks],
                metadatas=[_metadata(chunk) for chunk in chunks],
            )
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store write failed: {exc}") from exc

    def delete_document(self, document_id: uuid.UUID) -> None:
        try:
            self._usable().delete(where={"document_id": str(document_id)})
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store delete failed: {exc}") from exc

    def query(
        self, embedding: Sequence[float], document_ids: Sequence[uuid.UUID], top_k: int
    ) -> list[ScoredChunk]:
        if not document_ids or top_k <= 0:
            return []
        try:
            result = self._usable().query(
                query_embeddings=[list(embedding)],
                n_results=top_k,
                where=_document_filter(document_ids),
                include=["documents", "metadatas", "distances"],
            )
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store query failed: {exc}") from exc
        texts = (result.get("documents") or [[]])[0]
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        return [
            ScoredChunk(_chunk_from(text or "", dict(metadata)), 1.0 - float(distance))
            for text, metadata, distance in zip(texts, metadatas, distances, strict=True)
        ]

    def count(self, document_id: uuid.UUID | None = None) -> int:
        collection = self._usable()
        if document_id is None:
            return int(collection.count())
        found = collection.get(where={"document_id": str(document_id)}, include=[])
        return len(found["ids"])

    def ping(self) -> None:
        try:
            self._client.heartbeat()
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store unreachable: {exc}") from exc
        self._usable()

    def reset_collection(self) -> None:
        """Drop and recreate the collection for the configured model (used by `reindex`)."""
        with self._lock:
            self._client.delete_collection(self._collection_name)
            self._collection = self._client.get_or_create_collection(
                self._collection_name,
                embedding_function=None,
                metadata={
                    "hnsw:space": "cosine",
                    "embedding_model": self.embedding_model,
                    "dimension": self.dimension,
                },
            )
            self.mismatch = None
