"""The Chroma adapter: a `BlockingVectorStore` with one collection per document owner.

Chroma's client blocks, so the app serves this store through `index.ThreadedIndex`. Every call
that reaches Chroma goes through one guard (`_guard`), which turns Chroma's errors into
`VectorStoreUnavailable` and forgets a cached collection handle that failed.

Why a collection per owner: Chroma applies a metadata filter by scanning the collection's
metadata, so one shared collection made every scoped search cost grow with the whole
installation (about 80 ms at 100k chunks against 3 ms unfiltered). Per owner, a search only
touches the collections of the owners whose documents are in scope (the user's own, plus the
owners of shared documents), and their size is what the filter costs.

Why no text: PostgreSQL holds every chunk's text (`document_chunks`, for BM25), and a Chroma
write that carries it costs twice as long (a 64-chunk batch: 84 against 40 ms), all of it with
the interpreter lock held when Chroma runs in the process, and takes four times the disk
(Chroma indexes the text for its own full-text search, which nothing here uses). A chunk is
stored with its vector and metadata only. A query returns ids and similarities, nothing read
back: the retriever reads the passages a search keeps, text and page, from PostgreSQL
(`index.with_passages`), and only those PostgreSQL lacks (chunks of the single-collection
layout, which kept their text here) from Chroma (`read`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError

from docchat.retrieval.index import (
    Chunk,
    ChunkAddress,
    DocumentRef,
    DocumentScope,
    Embedding,
    ScoredChunk,
    VectorStoreUnavailable,
    chunk_id,
    parse_chunk_id,
)

logger = logging.getLogger(__name__)


def _metadata(chunk: Chunk) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "document_id": str(chunk.document_id),
        "chunk_index": chunk.chunk_index,
        "owner_id": str(chunk.owner_id),
        "visibility": chunk.visibility,
        "filename": chunk.filename,
        "version": chunk.version,
    }
    if chunk.page is not None:
        metadata["page"] = chunk.page
    if chunk.location is not None:
        metadata["location"] = chunk.location
    return metadata


def _chunk_from(text: str, metadata: dict[str, Any]) -> Chunk:
    page = metadata.get("page")
    location = metadata.get("location")
    return Chunk(
        document_id=uuid.UUID(str(metadata["document_id"])),
        chunk_index=int(metadata["chunk_index"]),
        text=text,
        page=int(page) if page is not None else None,
        owner_id=uuid.UUID(str(metadata["owner_id"])),
        visibility=str(metadata["visibility"]),
        filename=str(metadata["filename"]),
        location=str(location) if location is not None else None,
        # Chunks written before versions existed carry none: they are the first.
        version=int(metadata.get("version", 1)),
    )


def _document_filter(document_ids: Sequence[uuid.UUID]) -> dict[str, Any]:
    ids = [str(document_id) for document_id in document_ids]
    return {"document_id": ids[0]} if len(ids) == 1 else {"document_id": {"$in": ids}}


def _nearest(result: Any) -> list[tuple[str, float]]:
    """A query's ids, each with its cosine similarity, most similar first."""
    ids = (result.get("ids") or [[]])[0]
    distances = (result.get("distances") or [[]])[0]
    return [(key, 1.0 - float(distance)) for key, distance in zip(ids, distances, strict=True)]


def _answering(
    hits: list[tuple[str, float]], versions: dict[uuid.UUID, int]
) -> list[tuple[str, float]]:
    """The hits that are chunks of a document in `versions`, of the version named for it."""
    kept = []
    for key, similarity in hits:
        address = parse_chunk_id(key)
        if address is not None and versions.get(address[0]) == address[2]:
            kept.append((key, similarity))
    return kept


LEGACY_MOVE_BATCH = 1000
# Unfiltered candidates fetched per wanted chunk before falling back to the filtered query.
OVERFETCH = 3


def _query_owner(
    collection: Any, embedding: list[float], versions: dict[uuid.UUID, int], top_k: int
) -> list[tuple[str, float]]:
    """The ids of the `top_k` chunks of the documents in `versions` (of the version named for
    each) in one owner's collection, with their similarity, most similar first.

    Only ids and distances are asked for: a Chroma query that also returns texts and metadata
    is slow to (15 ms for 60 results at 100k chunks, against 2 ms without); PostgreSQL tells
    the rest of the chunks a search keeps.

    Most searches cover all, or most, of an owner's documents (scope "all"), so the index alone
    finds them: an unfiltered query over-fetches and keeps the wanted documents' chunks (their
    ids name document and version). If the top `OVERFETCH * top_k` already hold `top_k` wanted
    chunks, those are the best `top_k` of the wanted documents; if the collection had fewer
    chunks than asked for, every chunk was seen. Otherwise (a narrow scope) the filtered query
    answers; on 1,000 chunks it costs about 10 ms against 2 ms for the unfiltered one.
    """
    asked = top_k * OVERFETCH
    seen = _nearest(
        collection.query(query_embeddings=[embedding], n_results=asked, include=["distances"])
    )
    kept = _answering(seen, versions)
    if len(kept) >= top_k or len(seen) < asked:
        return kept[:top_k]
    # Twice as many: while a new version is read, its chunks sit beside the answering ones.
    result = collection.query(
        query_embeddings=[embedding],
        n_results=top_k * 2,
        where=_document_filter(list(versions)),
        include=["distances"],
    )
    return _answering(_nearest(result), versions)[:top_k]


def _address(key: str, owner_id: uuid.UUID) -> Chunk:
    """A chunk known by its id alone (the caller made sure it parses): where it stands and its
    text are PostgreSQL's to tell (`index.with_passages`)."""
    address = parse_chunk_id(key)
    assert address is not None
    document_id, index, version = address
    return Chunk(document_id, index, "", None, owner_id, "", "", version=version)


class ChromaVectorStore:
    """Chunks in `{collection}_o_{owner}` collections; `{collection}` itself records the model.

    Blocking: serve it through `index.ThreadedIndex`."""

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
        self._prefix = collection
        self._lock = threading.Lock()
        self._owners: dict[uuid.UUID, Any] = {}
        self.mismatch: str | None = None
        self._marker = self._client.get_or_create_collection(
            collection, embedding_function=None, metadata=self._model_metadata()
        )
        self.mismatch = self._mismatch(self._marker)
        if self.mismatch:
            logger.error(self.mismatch)
        elif self.has_legacy_chunks():
            logger.warning(
                "chunks of an older layout wait in %r, where no search looks: the service "
                "(or a worker) moves them when it starts, as `docchat reindex --layout-only` does",
                collection,
            )

    def _model_metadata(self) -> dict[str, Any]:
        return {
            "hnsw:space": "cosine",
            "embedding_model": self.embedding_model,
            "dimension": self.dimension,
        }

    def _mismatch(self, collection: Any) -> str | None:
        recorded = collection.metadata or {}
        model, dimension = recorded.get("embedding_model"), recorded.get("dimension")
        if (model, dimension) == (self.embedding_model, self.dimension):
            return None
        return (
            f"The vector index was built with {model} ({dimension} dimensions) but the "
            f"configured embedder is {self.embedding_model} ({self.dimension}); "
            "run `docchat reindex` to rebuild it"
        )

    def _owner_collection_name(self, owner_id: uuid.UUID) -> str:
        return f"{self._prefix}_o_{owner_id.hex}"

    def _owner_collection(self, owner_id: uuid.UUID, *, create: bool) -> Any | None:
        """The owner's collection (cached), or None when it does not exist and `create` is off."""
        if self.mismatch:
            raise VectorStoreUnavailable(self.mismatch)
        with self._lock:
            cached = self._owners.get(owner_id)
            if cached is not None:
                return cached
            name = self._owner_collection_name(owner_id)
            if create:
                collection = self._client.get_or_create_collection(
                    name, embedding_function=None, metadata=self._model_metadata()
                )
            else:
                try:
                    collection = self._client.get_collection(name, embedding_function=None)
                except NotFoundError:
                    return None
            mismatch = self._mismatch(collection)
            if mismatch:
                raise VectorStoreUnavailable(mismatch)
            self._owners[owner_id] = collection
            return collection

    def _forget(self, owner_id: uuid.UUID) -> None:
        """Drop a cached handle after a failure (e.g. the collection was rebuilt elsewhere)."""
        with self._lock:
            self._owners.pop(owner_id, None)

    @contextlib.contextmanager
    def _guard(self, owner_id: uuid.UUID, action: str) -> Iterator[None]:
        """Chroma's failures leave as `VectorStoreUnavailable`, the failed handle forgotten."""
        try:
            yield
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            self._forget(owner_id)
            raise VectorStoreUnavailable(f"vector store {action} failed: {exc}") from exc

    def has_legacy_chunks(self) -> bool:
        """Chunks wait in the single collection older versions used (`move_legacy_chunks`)."""
        return self.legacy_chunk_count() > 0

    def legacy_chunk_count(self) -> int:
        """How many chunks wait in the single collection (none while the model mismatches:
        those are not this embedder's vectors)."""
        return 0 if self.mismatch else int(self._marker.count())

    def move_legacy_chunks(self, progress: Callable[[int, int], bool] | None = None) -> int:
        """Move chunks written before collections were split by owner to their owner's
        collection, a batch at a time (`index.OlderLayout`); returns how many moved."""
        moved = 0
        while True:
            batch = self._marker.get(
                limit=LEGACY_MOVE_BATCH, include=["embeddings", "documents", "metadatas"]
            )
            if not batch["ids"]:
                break
            texts, metadatas = batch["documents"] or [], batch["metadatas"] or []
            chunks = [
                _chunk_from(text or "", dict(metadata))
                for text, metadata in zip(texts, metadatas, strict=True)
            ]
            vectors = batch["embeddings"]
            assert vectors is not None
            # With their text: documents of that age may have no rows in PostgreSQL.
            self._write(chunks, [[float(x) for x in vector] for vector in vectors], texts=True)
            self._marker.delete(ids=batch["ids"])
            moved += len(chunks)
            if progress is not None and not progress(moved, int(self._marker.count())):
                break
        if moved:
            logger.info("moved %d chunks into per-owner collections", moved)
        return moved

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Embedding]) -> None:
        """Store the chunks' vectors and metadata; their text stays in PostgreSQL."""
        self._write(chunks, embeddings, texts=False)

    def _write(
        self, chunks: Sequence[Chunk], embeddings: Sequence[Embedding], *, texts: bool
    ) -> None:
        grouped: dict[uuid.UUID, list[int]] = {}
        for position, chunk in enumerate(chunks):
            grouped.setdefault(chunk.owner_id, []).append(position)
        for owner_id, positions in grouped.items():
            with self._guard(owner_id, "write"):
                collection = self._owner_collection(owner_id, create=True)
                assert collection is not None
                collection.upsert(
                    ids=[chunks[i].id for i in positions],
                    embeddings=[list(embeddings[i]) for i in positions],
                    documents=[chunks[i].text for i in positions] if texts else None,
                    metadatas=[_metadata(chunks[i]) for i in positions],
                )

    def delete_document(self, document: DocumentRef, except_version: int | None = None) -> None:
        with self._guard(document.owner_id, "delete"):
            collection = self._owner_collection(document.owner_id, create=False)
            if collection is None:
                return
            where = {"document_id": str(document.id)}
            if except_version is None:
                collection.delete(where=where)
                return
            stored = collection.get(where=where, include=["metadatas"])
            old = [
                key
                for key, metadata in zip(stored["ids"], stored["metadatas"] or [], strict=True)
                if int(dict(metadata).get("version", 1)) != except_version
            ]
            if old:
                collection.delete(ids=old)

    def query(
        self, embedding: Embedding, documents: Sequence[DocumentRef], top_k: int
    ) -> list[ScoredChunk]:
        if not documents or top_k <= 0:
            return []
        vector = list(embedding)
        nearest: list[tuple[str, float, uuid.UUID]] = []
        for owner_id, versions in DocumentScope.of(documents).by_owner.items():
            with self._guard(owner_id, "query"):
                collection = self._owner_collection(owner_id, create=False)
                if collection is not None:
                    hits = _query_owner(collection, vector, versions, top_k)
                    nearest.extend((key, similarity, owner_id) for key, similarity in hits)
        nearest.sort(key=lambda hit: hit[1], reverse=True)
        return [
            ScoredChunk(_address(key, owner_id), similarity)
            for key, similarity, owner_id in nearest[:top_k]
        ]

    def nearest(
        self, embedding: Embedding, owners: Sequence[uuid.UUID], per_owner: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]:
        """Each owner's `per_owner` nearest chunks, unfiltered: one query per owner collection,
        asking for ids and distances only (a few milliseconds at 100k chunks)."""
        found: dict[uuid.UUID, list[ScoredChunk]] = {}
        if per_owner <= 0:
            return found
        vector = list(embedding)
        for owner_id in owners:
            with self._guard(owner_id, "query"):
                collection = self._owner_collection(owner_id, create=False)
                if collection is None:
                    continue
                result = collection.query(
                    query_embeddings=[vector], n_results=per_owner, include=["distances"]
                )
            found[owner_id] = [
                ScoredChunk(_address(key, owner_id), similarity)
                for key, similarity in _nearest(result)
                if parse_chunk_id(key) is not None
            ]
        return found

    def read(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """The chunks as stored (metadata, and the text of those written with it); a chunk not
        in the store is left out."""
        grouped: dict[uuid.UUID, list[str]] = {}
        for chunk in chunks:
            grouped.setdefault(chunk.owner_id, []).append(chunk.id)
        found: list[Chunk] = []
        for owner_id, ids in grouped.items():
            with self._guard(owner_id, "read"):
                collection = self._owner_collection(owner_id, create=False)
                if collection is None:
                    continue
                stored = collection.get(ids=ids, include=["documents", "metadatas"])
            texts, metadatas = stored["documents"] or [], stored["metadatas"] or []
            found.extend(
                _chunk_from(text or "", dict(metadata))
                for text, metadata in zip(texts, metadatas, strict=True)
            )
        return found

    def similarities(
        self, embedding: Embedding, chunks: Sequence[ChunkAddress]
    ) -> dict[str, float]:
        query = np.asarray(embedding, dtype=np.float64)
        query /= max(float(np.linalg.norm(query)), 1e-12)
        grouped: dict[uuid.UUID, list[str]] = {}
        for document, index in chunks:
            grouped.setdefault(document.owner_id, []).append(
                chunk_id(document.id, index, document.version)
            )
        found: dict[str, float] = {}
        for owner_id, ids in grouped.items():
            with self._guard(owner_id, "read"):
                collection = self._owner_collection(owner_id, create=False)
                if collection is None:
                    continue
                stored = collection.get(ids=ids, include=["embeddings"])
            vectors = stored["embeddings"]
            if vectors is None or not len(stored["ids"]):
                continue
            matrix = np.asarray(vectors, dtype=np.float64)
            norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
            for key, value in zip(stored["ids"], (matrix @ query) / norms, strict=True):
                found[key] = float(value)
        return found

    def copy_document(self, document: DocumentRef, owner_id: uuid.UUID) -> int:
        """Copy the document's chunks (vectors, metadata, any stored text) into another owner's
        collection a batch at a time; the old owner's stay until that collection is dropped
        (`delete_owner`), so a copy cut short changes nothing that answers, and running it
        again finishes it (the ids are the same: an upsert)."""
        if owner_id == document.owner_id:
            return 0
        copied = 0
        where = {"document_id": str(document.id)}
        while True:
            with self._guard(document.owner_id, "copy"):
                source = self._owner_collection(document.owner_id, create=False)
                if source is None:
                    return copied
                batch = source.get(
                    where=where,
                    limit=LEGACY_MOVE_BATCH,
                    offset=copied,
                    include=["embeddings", "documents", "metadatas"],
                )
            if not batch["ids"]:
                return copied
            texts = list(batch["documents"] or [])
            metadatas = [
                dict(metadata) | {"owner_id": str(owner_id)}
                for metadata in batch["metadatas"] or []
            ]
            vectors = batch["embeddings"]
            assert vectors is not None
            with self._guard(owner_id, "write"):
                target = self._owner_collection(owner_id, create=True)
                assert target is not None
                target.upsert(
                    ids=list(batch["ids"]),
                    embeddings=[[float(x) for x in vector] for vector in vectors],
                    documents=[text or "" for text in texts] if any(texts) else None,
                    metadatas=metadatas,
                )
            copied += len(batch["ids"])

    def delete_owner(self, owner_id: uuid.UUID) -> None:
        """Drop the owner's collection, every chunk of theirs with it."""
        if self.mismatch:
            raise VectorStoreUnavailable(self.mismatch)
        with self._guard(owner_id, "delete"), self._lock:
            self._owners.pop(owner_id, None)
            try:
                self._client.delete_collection(self._owner_collection_name(owner_id))
            except (NotFoundError, ValueError):  # never written to (older clients: ValueError)
                return

    def count(self, document: DocumentRef | None = None) -> int:
        if document is not None:
            with self._guard(document.owner_id, "count"):
                collection = self._owner_collection(document.owner_id, create=False)
                if collection is None:
                    return 0
                found = collection.get(
                    where={"document_id": str(document.id)}, include=["metadatas"]
                )
            versions = [int(dict(m).get("version", 1)) for m in found["metadatas"] or []]
            return versions.count(document.version)
        return sum(int(collection.count()) for collection in self._all_collections())

    def _all_collections(self) -> list[Any]:
        owned_prefix = f"{self._prefix}_o_"
        return [
            self._client.get_collection(collection.name, embedding_function=None)
            for collection in self._client.list_collections()
            if collection.name == self._prefix or collection.name.startswith(owned_prefix)
        ]

    def ping(self) -> None:
        try:
            self._client.heartbeat()
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store unreachable: {exc}") from exc
        if self.mismatch:
            raise VectorStoreUnavailable(self.mismatch)

    def reset_collection(self) -> None:
        """Drop every collection of this store and record the configured model (`reindex`)."""
        with self._lock:
            for collection in self._all_collections():
                self._client.delete_collection(collection.name)
            self._owners.clear()
            self._marker = self._client.get_or_create_collection(
                self._prefix, embedding_function=None, metadata=self._model_metadata()
            )
            self.mismatch = None
