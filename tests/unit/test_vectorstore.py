"""The Chroma store on disk: per-owner collections, scope, legacy layout, model records."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings as ChromaSettings

from docchat.retrieval import chroma
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import (
    Chunk,
    DocumentRef,
    ScoredChunk,
    ThreadedIndex,
    VectorStoreUnavailable,
    chunk_id,
    parse_chunk_id,
    with_passages,
)

DIMENSION = 3


def open_store(path: Path, model: str = "test-model") -> ChromaVectorStore:
    return ChromaVectorStore(
        collection="chunks", embedding_model=model, dimension=DIMENSION, path=path
    )


def chunk(document: DocumentRef, index: int, text: str) -> Chunk:
    return Chunk(document.id, index, text, 1, document.owner_id, "private", "notes.md")


def new_document(owner: uuid.UUID | None = None) -> DocumentRef:
    return DocumentRef(uuid.uuid4(), owner or uuid.uuid4())


def written(hits: list[ScoredChunk], chunks: list[Chunk]) -> list[str]:
    """The text each hit was written with (the store keeps none: PostgreSQL does)."""
    by_id = {chunk.id: chunk.text for chunk in chunks}
    return [by_id[hit.chunk.id] for hit in hits]


def test_query_returns_only_the_documents_in_scope(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    mine, theirs = new_document(), new_document()
    other_of_mine = new_document(mine.owner_id)
    chunks = [chunk(mine, 0, "mine"), chunk(theirs, 0, "theirs"), chunk(other_of_mine, 0, "other")]
    store.upsert(chunks, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    hits = store.query([1.0, 0.0, 0.0], [mine], top_k=10)
    assert written(hits, chunks) == ["mine"]
    assert store.query([1.0, 0.0, 0.0], [new_document()], top_k=10) == []


def test_a_scope_spanning_owners_is_merged_by_similarity(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    own, shared = new_document(), new_document()
    chunks = [chunk(own, 0, "own far"), chunk(own, 1, "own near"), chunk(shared, 0, "shared mid")]
    store.upsert(chunks, [[0.0, 1.0, 0.0], [1.0, 0.1, 0.0], [1.0, 0.5, 0.0]])
    hits = store.query([1.0, 0.0, 0.0], [own, shared], top_k=2)
    assert written(hits, chunks) == ["own near", "shared mid"]
    assert hits[0].similarity > hits[1].similarity
    assert store.count() == 3 and store.count(own) == 2


def test_delete_document_removes_only_that_document(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    kept, gone = new_document(), new_document()
    gone = DocumentRef(gone.id, kept.owner_id)
    store.upsert([chunk(kept, 0, "kept"), chunk(gone, 0, "gone")], [[1.0, 0, 0], [1.0, 0, 0]])
    store.delete_document(gone)
    store.delete_document(new_document())  # an owner without a collection is no error
    assert store.count(gone) == 0 and store.count(kept) == 1


def test_chunks_of_the_single_collection_layout_move_to_their_owners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = [new_document(), new_document()]
    # Same client settings as the store's: Chroma keeps one client per folder and process.
    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    legacy = chromadb.PersistentClient(
        path=str(tmp_path), settings=settings
    ).get_or_create_collection(
        "chunks",
        embedding_function=None,
        metadata={"hnsw:space": "cosine", "embedding_model": "test-model", "dimension": 3},
    )
    for document in documents:
        legacy.add(
            ids=[f"{document.id}_0"],
            embeddings=[[1.0, 0.0, 0.0]],
            documents=[f"text of {document.id}"],
            metadatas=[
                {
                    "document_id": str(document.id),
                    "chunk_index": 0,
                    "owner_id": str(document.owner_id),
                    "visibility": "private",
                    "filename": "old.md",
                    "page": 3,
                }
            ],
        )
    store = open_store(tmp_path)
    assert store.has_legacy_chunks() and store.legacy_chunk_count() == 2
    # A move told to stop after its first batch (a service stopping) leaves the rest where
    # they were, and the next one (the next start) finishes it.
    monkeypatch.setattr(chroma, "LEGACY_MOVE_BATCH", 1)
    told: list[tuple[int, int]] = []
    assert store.move_legacy_chunks(lambda moved, left: bool(told.append((moved, left)))) == 1
    assert told == [(1, 1)] and store.legacy_chunk_count() == 1
    assert store.move_legacy_chunks() == 1  # what the start and `reindex --layout-only` run
    assert store.move_legacy_chunks() == 0 and not store.has_legacy_chunks()
    for document in documents:
        [hit] = store.query([1.0, 0.0, 0.0], [document], top_k=5)
        # Such chunks may have no rows in PostgreSQL: the store still has what they were.
        [moved] = store.read([hit.chunk])
        assert moved.text == f"text of {document.id}" and moved.page == 3
    assert store.count() == 2  # moved, not copied: the record collection is empty now


class NoRows:
    """PostgreSQL with no rows for the chunks asked about (a layout older than the rows)."""

    async def passages_of(self, chunks: Sequence[Chunk]) -> dict[str, Chunk]:
        return {}


async def test_passages_postgresql_lacks_come_from_the_store_if_it_kept_them(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path)
    kept, bare = new_document(), new_document()
    old = chunk(kept, 0, "written with its text")
    store._write([old], [[1.0, 0.0, 0.0]], texts=True)  # as the layout move writes them
    store.upsert([chunk(bare, 0, "written without")], [[1.0, 0.0, 0.0]])
    hits = store.query([1.0, 0.0, 0.0], [kept, bare], top_k=5)
    assert len(hits) == 2 and not any(hit.chunk.text for hit in hits)
    whole = await with_passages(hits, NoRows(), ThreadedIndex(store))
    assert [hit.chunk for hit in whole] == [old]  # the other has no text anywhere: left out


def test_a_store_built_by_another_model_refuses_to_serve(tmp_path: Path) -> None:
    document = new_document()
    open_store(tmp_path).upsert([chunk(document, 0, "x")], [[1.0, 0.0, 0.0]])
    store = open_store(tmp_path, model="another-model")
    assert store.mismatch and "docchat reindex" in store.mismatch
    with pytest.raises(VectorStoreUnavailable):
        store.query([1.0, 0.0, 0.0], [document], top_k=1)
    store.reset_collection()
    assert store.mismatch is None and store.count() == 0
    assert store.query([1.0, 0.0, 0.0], [document], top_k=1) == []


def test_a_narrow_scope_finds_its_chunks_behind_many_closer_ones(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    crowd, wanted = new_document(), new_document()
    wanted = DocumentRef(wanted.id, crowd.owner_id)  # same owner, same collection
    chunks = [chunk(crowd, i, f"crowd {i}") for i in range(30)] + [chunk(wanted, 0, "wanted")]
    vectors = [[1.0, 0.01 * i, 0.0] for i in range(30)] + [[0.0, 0.0, 1.0]]
    store.upsert(chunks, vectors)
    hits = store.query([1.0, 0.0, 0.0], [wanted], top_k=4)
    assert written(hits, chunks) == ["wanted"]
    wide = store.query([1.0, 0.0, 0.0], [crowd, wanted], top_k=4)
    assert written(wide, chunks) == ["crowd 0", "crowd 1", "crowd 2", "crowd 3"]


def test_a_query_answers_from_the_answering_version_with_every_field(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    document = new_document()
    old = Chunk(document.id, 0, "old text", 1, document.owner_id, "private", "a.md", "§1", 1)
    new = Chunk(document.id, 0, "new text", 4, document.owner_id, "everyone", "a.md", "§2", 2)
    store.upsert([old, new], [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0]])
    current = DocumentRef(document.id, document.owner_id, version=2)
    hits = store.query([1.0, 0.0, 0.0], [current], top_k=5)
    # The query names the chunk (PostgreSQL has the rest); the store kept every field but text.
    address = replace(new, text="", page=None, visibility="", filename="", location=None)
    assert [hit.chunk for hit in hits] == [address]
    assert hits[0].similarity == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5, abs=1e-4)
    assert store.read([hits[0].chunk]) == [replace(new, text="")]


@pytest.mark.parametrize("version", [1, 2, 17])
def test_a_chunk_id_names_its_document_index_and_version(version: int) -> None:
    document = uuid.uuid4()
    assert parse_chunk_id(chunk_id(document, 12, version)) == (document, 12, version)


SOME_ID = "6f1c2a3e-0d4b-4c5a-9e8f-7a6b5c4d3e2f"  # fixed: test ids must match across processes


@pytest.mark.parametrize("key", ["", "x", "not-a-uuid_3", f"{SOME_ID}_x_3", SOME_ID])
def test_an_id_of_another_shape_names_no_chunk(key: str) -> None:
    assert parse_chunk_id(key) is None


def test_the_text_of_a_chunk_is_not_written_to_chroma(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    document = new_document()
    store.upsert([chunk(document, 0, "the ferry leaves at nine")], [[1.0, 0.0, 0.0]])
    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    collection = chromadb.PersistentClient(path=str(tmp_path), settings=settings).get_collection(
        f"chunks_o_{document.owner_id.hex}"
    )
    stored = collection.get(include=["documents", "metadatas"])
    assert stored["documents"] == [None]
    assert stored["metadatas"] and stored["metadatas"][0]["filename"] == "notes.md"
    [hit] = store.query([1.0, 0.0, 0.0], [document], top_k=1)
    assert hit.chunk.text == "" and store.read([hit.chunk])[0].page == 1
