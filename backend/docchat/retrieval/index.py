"""What the indexes store and the contract of a vector index, independent of any engine.

Contract of `VectorIndex` (async; every caller awaits it, none wraps it in a thread):
- `upsert(chunks, embeddings)` stores chunks under their ids (`chunk_id`), replacing any with
  the same id;
- `delete_document(document, except_version=None)` removes every chunk of that document (but
  those of `except_version`, when given: a new version's chunks stay as the old ones go);
- `query(embedding, documents, top_k)` returns at most `top_k` chunks of `documents` (never of
  any other, nor of another version than the one each `DocumentRef` names), most similar
  first, with cosine similarity; each chunk may come as its address alone (document, index,
  version, owner), its text empty: PostgreSQL holds the text and where the passage stands
  (page, location, file name), and `with_passages` reads them for the chunks a search keeps;
- `nearest(embedding, owners, per_owner)` returns, for each of `owners`, up to `per_owner` of
  that owner's chunks (any document, any version), most similar first: a wide scope's search
  (`DocumentScope` without a list) asks this, then keeps what PostgreSQL finds in the scope;
- `read(chunks)` returns the named chunks as the index stored them (text and location only
  where it kept them: chunks written by versions that did), for passages PostgreSQL lacks;
- `similarities(embedding, chunks)` gives the cosine similarity of the named chunks (by
  document and chunk index) that exist, keyed by chunk id;
- `copy_document(document, owner_id)` copies every chunk of a document (all versions) to
  another owner, vectors kept (an account deleted with its shared documents handed over; the
  old owner's copies go with `delete_owner`); `delete_owner(owner_id)` removes every chunk of
  an owner (their account deleted);
- `count(document)` counts the chunks of a document's version (or all chunks), `ping()` checks
  it can serve;
- failures raise `VectorStoreUnavailable`.
Access control is the caller's job: `documents` must come from the owner-scoped query.

An engine whose client blocks (Chroma's does) implements `BlockingVectorStore`, the same
methods without `async`, and `ThreadedIndex` serves it as a `VectorIndex`.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol, runtime_checkable

from docchat.config import Settings
from docchat.kit.registry import Registry


class VectorStoreUnavailable(Exception):
    """The store cannot answer (down, unreadable, or built by another embedding model)."""


def chunk_id(document_id: uuid.UUID, chunk_index: int, version: int = 1) -> str:
    """A chunk's id in the vector index; versions after the first have their own ids, so a new
    version is written beside the one that answers."""
    if version == 1:
        return f"{document_id}_{chunk_index}"
    return f"{document_id}_v{version}_{chunk_index}"


def parse_chunk_id(key: str) -> tuple[uuid.UUID, int, int] | None:
    """The (document id, chunk index, version) a `chunk_id` names; None for any other id."""
    parts = key.split("_")
    try:
        if len(parts) == 2:
            return uuid.UUID(parts[0]), int(parts[1]), 1
        if len(parts) == 3 and parts[1].startswith("v"):
            return uuid.UUID(parts[0]), int(parts[2]), int(parts[1][1:])
    except ValueError:
        return None
    return None


@dataclass(frozen=True)
class Chunk:
    document_id: uuid.UUID
    chunk_index: int
    text: str
    page: int | None
    owner_id: uuid.UUID
    visibility: str
    filename: str
    location: str | None = None
    version: int = 1  # of the document's content this chunk was read from

    @property
    def id(self) -> str:
        return chunk_id(self.document_id, self.chunk_index, self.version)


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    similarity: float
    # Share of the question's BM25 weight (IDF) this chunk matches: 0 when BM25 did not run or
    # did not propose it, about 1 when it holds every word of the question.
    lexical_coverage: float = 0.0


class OwnedDocument(Protocol):
    @property
    def id(self) -> uuid.UUID: ...

    @property
    def owner_id(self) -> uuid.UUID: ...

    @property
    def version(self) -> int: ...


class DocumentRef(NamedTuple):
    """A document as the indexes address it: its id, its owner (whose collection holds it),
    and the version of its content that answers. A tuple: a wide scope builds a thousand per
    question, at a third of a frozen dataclass's cost."""

    id: uuid.UUID
    owner_id: uuid.UUID
    version: int = 1

    @classmethod
    def of(cls, document: OwnedDocument) -> DocumentRef:
        return cls(document.id, document.owner_id, document.version)


@dataclass(frozen=True)
class ScopeCondition:
    """Which documents a wide scope holds, as PostgreSQL reads it: a condition over the
    `documents` table aliased `d` (live, completed, readable by the asker), its parameters all
    named `scope_*`. Built by the documents package (`documents.scopes`), where reading rights
    are known; the indexes only embed it in their statements."""

    sql: str
    parameters: Mapping[str, Any]


class DocumentScope:
    """The documents a search may read, as the owner-scoped query resolved them.

    A narrow scope (documents chosen for a message or a chat, a small library) lists its
    documents (`refs`), each with the version that answers. A wide one ("all I may read" over a
    shared library of 100,000 notes) does not: it is a condition PostgreSQL checks (`condition`),
    the owners whose vector collections may hold its chunks (`owners`), and its size and totals
    as last counted. Its cost does not grow with its documents: the indexes are asked with the
    condition and verify what they find (`documents.scopes`)."""

    def __init__(
        self,
        refs: Iterable[DocumentRef] | None = (),
        *,
        condition: ScopeCondition | None = None,
        owners: Iterable[uuid.UUID] | None = None,
        size: int | None = None,
        totals: tuple[float, float] | None = None,
    ) -> None:
        self.refs: tuple[DocumentRef, ...] | None = None if refs is None else tuple(refs)
        if self.refs is None and condition is None:
            raise ValueError("a scope is its documents or a condition")
        self.condition = condition
        listed = self.refs or ()
        self.owners: tuple[uuid.UUID, ...] = (
            tuple(owners)
            if owners is not None
            else tuple(dict.fromkeys(r.owner_id for r in listed))
        )
        # Documents in the scope: exact when they are listed, else as last counted.
        self.size = len(listed) if self.refs is not None else (size or 0)
        # (chunks, average chunk length in words) for BM25, when the resolver counted them.
        self.totals = totals

    @classmethod
    def of(cls, documents: SearchScope) -> DocumentScope:
        return documents if isinstance(documents, DocumentScope) else cls(documents)

    @property
    def listed(self) -> bool:
        return self.refs is not None

    def __bool__(self) -> bool:
        return bool(self.refs) if self.refs is not None else bool(self.owners)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DocumentScope):
            return (self.refs, self.condition) == (other.refs, other.condition)
        return isinstance(other, Sequence) and self.refs == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = "listed" if self.refs is not None else "wide"
        return f"DocumentScope({kind}, {self.size} documents, {len(self.owners)} owners)"

    def __iter__(self) -> Iterator[DocumentRef]:
        """The listed documents; a wide scope has no list to go through."""
        if self.refs is None:
            raise TypeError("a wide scope does not list its documents")
        return iter(self.refs)

    def with_documents(self, extra: Sequence[DocumentRef]) -> DocumentScope:
        """This scope and `extra` (documents the caller resolved as readable)."""
        if not extra:
            return self
        if self.refs is not None:
            known = self.by_id
            return DocumentScope((*self.refs, *(r for r in extra if r.id not in known)))
        assert self.condition is not None
        parameters = dict(self.condition.parameters)
        parameters["scope_documents"] = [*parameters["scope_documents"], *(r.id for r in extra)]
        owners = dict.fromkeys((*self.owners, *(r.owner_id for r in extra)))
        return DocumentScope(
            None,
            condition=ScopeCondition(self.condition.sql, parameters),
            owners=owners,
            size=self.size + len(extra),
            totals=self.totals,
        )

    @functools.cached_property
    def ids(self) -> list[uuid.UUID]:
        return [document.id for document in self.refs or ()]

    @functools.cached_property
    def by_id(self) -> dict[uuid.UUID, DocumentRef]:
        return {document.id: document for document in self.refs or ()}

    @functools.cached_property
    def by_owner(self) -> dict[uuid.UUID, dict[uuid.UUID, int]]:
        """Each owner's listed documents, with the version of each that answers."""
        grouped: dict[uuid.UUID, dict[uuid.UUID, int]] = {}
        for document in self.refs or ():
            grouped.setdefault(document.owner_id, {})[document.id] = document.version
        return grouped

    @functools.cached_property
    def digest(self) -> bytes:
        """Names the set of listed documents (not their versions), for what is kept per scope."""
        return hashlib.blake2b(b"".join(i.bytes for i in self.ids), digest_size=16).digest()


# What a search takes: a resolved scope, or documents listed by the caller.
SearchScope = DocumentScope | Sequence[DocumentRef]
Embedding = Sequence[float]
ChunkAddress = tuple[DocumentRef, int]


class VectorIndex(Protocol):
    async def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Embedding]) -> None: ...

    async def delete_document(
        self, document: DocumentRef, except_version: int | None = None
    ) -> None: ...

    async def query(
        self, embedding: Embedding, documents: Sequence[DocumentRef], top_k: int
    ) -> list[ScoredChunk]: ...

    async def nearest(
        self, embedding: Embedding, owners: Sequence[uuid.UUID], per_owner: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]: ...

    async def similarities(
        self, embedding: Embedding, chunks: Sequence[ChunkAddress]
    ) -> dict[str, float]: ...

    async def read(self, chunks: Sequence[Chunk]) -> list[Chunk]: ...

    async def copy_document(self, document: DocumentRef, owner_id: uuid.UUID) -> int: ...

    async def delete_owner(self, owner_id: uuid.UUID) -> None: ...

    async def count(self, document: DocumentRef | None = None) -> int: ...

    async def ping(self) -> None: ...


class BlockingVectorStore(Protocol):
    """A vector store (the port): the app uses it through `ThreadedIndex`, off the event loop.
    Implementations are registered by name in `VECTOR_STORES` and must pass the contract
    tests in `tests/contracts/test_vector_store.py`."""

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Embedding]) -> None: ...

    def delete_document(self, document: DocumentRef, except_version: int | None = None) -> None: ...

    def query(
        self, embedding: Embedding, documents: Sequence[DocumentRef], top_k: int
    ) -> list[ScoredChunk]: ...

    def nearest(
        self, embedding: Embedding, owners: Sequence[uuid.UUID], per_owner: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]: ...

    def similarities(
        self, embedding: Embedding, chunks: Sequence[ChunkAddress]
    ) -> dict[str, float]: ...

    def read(self, chunks: Sequence[Chunk]) -> list[Chunk]: ...

    def copy_document(self, document: DocumentRef, owner_id: uuid.UUID) -> int:
        """Copy the document's chunks to `owner_id`'s; returns how many."""
        ...

    def delete_owner(self, owner_id: uuid.UUID) -> None: ...

    def count(self, document: DocumentRef | None = None) -> int: ...

    def ping(self) -> None: ...

    def reset_collection(self) -> None:
        """Remove every vector and record the configured model (`docchat reindex`)."""
        ...


@runtime_checkable
class OlderLayout(Protocol):
    """A store that may still hold chunks as an earlier version of docchat laid them out
    (Chroma's single collection, before one per owner), where no search looks. They are moved
    to the current layout, vectors and text kept, without embedding anything again."""

    def legacy_chunk_count(self) -> int:
        """How many chunks wait in the older layout."""
        ...

    def move_legacy_chunks(self, progress: Callable[[int, int], bool] | None = None) -> int:
        """Move them, a batch at a time, each batch written before it is removed (a move cut
        short is finished by the next, and moving twice is harmless); after each batch,
        `progress(moved, left)` is told, and the move stops when it returns False. Returns
        how many moved."""
        ...


class VectorStoreSettings(NamedTuple):
    """What a vector store is built from: where it keeps its data, and the embedder's model
    and dimension (a store refuses vectors of another model)."""

    settings: Settings
    embedding_model: str
    dimension: int


# Vector stores by VECTOR_STORE, registered by the wiring (`docchat.main.components`).
VECTOR_STORES: Registry[Callable[[VectorStoreSettings], BlockingVectorStore]] = Registry(
    "vector store", "VECTOR_STORE"
)


class PassageRows(Protocol):
    async def passages_of(self, chunks: Sequence[Chunk]) -> dict[str, Chunk]:
        """Each of `chunks` that still exists as named (version included), whole (text, page,
        location, file name), by id."""
        ...


class ScopeRows(Protocol):
    """What PostgreSQL tells of a wide scope (`DocumentScope.condition`)."""

    async def admitted(self, scope: DocumentScope, chunks: Sequence[Chunk]) -> set[str]:
        """The ids of `chunks` whose document the scope holds, at the chunk's version."""
        ...

    async def documents_of(self, scope: DocumentScope, owner_id: uuid.UUID) -> list[DocumentRef]:
        """The scope's documents of one owner."""
        ...


class ChunkRows(PassageRows, ScopeRows, Protocol):
    """The chunks' rows in PostgreSQL, as the retriever reads them."""


async def with_passages(
    found: list[ScoredChunk], rows: PassageRows, index: VectorIndex
) -> list[ScoredChunk]:
    """`found`, each chunk whole: those found without their text are read from `rows`, and the
    few `rows` lack (chunks of a layout older than the rows) from `index`, which kept their
    text then. A chunk whose text is gone (its document deleted or given a new version since
    the query) is left out."""
    missing = [hit.chunk for hit in found if not hit.chunk.text]
    if not missing:
        return found
    read = await rows.passages_of(missing)
    older = [chunk for chunk in missing if chunk.id not in read]
    if older:
        read |= {chunk.id: chunk for chunk in await index.read(older) if chunk.text}
    return [
        hit if hit.chunk.text else replace(hit, chunk=read[hit.chunk.id])
        for hit in found
        if hit.chunk.text or hit.chunk.id in read
    ]


@dataclass(frozen=True)
class ThreadedIndex:
    """A `VectorIndex` over a blocking store: each call runs in a worker thread."""

    store: BlockingVectorStore

    async def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Embedding]) -> None:
        await asyncio.to_thread(self.store.upsert, chunks, embeddings)

    async def delete_document(
        self, document: DocumentRef, except_version: int | None = None
    ) -> None:
        await asyncio.to_thread(self.store.delete_document, document, except_version)

    async def query(
        self, embedding: Embedding, documents: Sequence[DocumentRef], top_k: int
    ) -> list[ScoredChunk]:
        return await asyncio.to_thread(self.store.query, embedding, documents, top_k)

    async def nearest(
        self, embedding: Embedding, owners: Sequence[uuid.UUID], per_owner: int
    ) -> dict[uuid.UUID, list[ScoredChunk]]:
        return await asyncio.to_thread(self.store.nearest, embedding, owners, per_owner)

    async def similarities(
        self, embedding: Embedding, chunks: Sequence[ChunkAddress]
    ) -> dict[str, float]:
        return await asyncio.to_thread(self.store.similarities, embedding, chunks)

    async def read(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        return await asyncio.to_thread(self.store.read, chunks)

    async def copy_document(self, document: DocumentRef, owner_id: uuid.UUID) -> int:
        return await asyncio.to_thread(self.store.copy_document, document, owner_id)

    async def delete_owner(self, owner_id: uuid.UUID) -> None:
        await asyncio.to_thread(self.store.delete_owner, owner_id)

    async def count(self, document: DocumentRef | None = None) -> int:
        return await asyncio.to_thread(self.store.count, document)

    async def ping(self) -> None:
        await asyncio.to_thread(self.store.ping)
