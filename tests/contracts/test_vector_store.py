"""The vector store port (`BlockingVectorStore`, registered in `VECTOR_STORES`): what every
implementation promises, run over each one. A store registered without a maker here fails
`test_every_registered_store_is_tested`."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.config import Settings
from docchat.retrieval.index import (
    VECTOR_STORES,
    BlockingVectorStore,
    Chunk,
    DocumentRef,
    ScoredChunk,
    VectorStoreSettings,
)

DIMENSION = 3
Maker = Callable[[Path], BlockingVectorStore]


def _registered(name: str, folder: Path) -> BlockingVectorStore:
    settings = Settings(_env_file=None, data_dir=folder, vector_store=name)  # type: ignore[call-arg]
    return VECTOR_STORES.get(name)(VectorStoreSettings(settings, "contract-model", DIMENSION))


MAKERS: dict[str, Maker] = {"chroma": lambda folder: _registered("chroma", folder)}


def test_every_registered_store_is_tested() -> None:
    assert sorted(MAKERS) == VECTOR_STORES.names()


@pytest.fixture(params=sorted(MAKERS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlockingVectorStore:
    return MAKERS[request.param](tmp_path)


def chunk(document: DocumentRef, index: int, text: str = "", version: int = 1) -> Chunk:
    return Chunk(
        document.id, index, text, 1, document.owner_id, "private", "notes.md", None, version
    )


def new_document(owner: uuid.UUID | None = None) -> DocumentRef:
    return DocumentRef(uuid.uuid4(), owner or uuid.uuid4())


def ids(hits: list[ScoredChunk]) -> list[str]:
    return [hit.chunk.id for hit in hits]


def test_a_query_sees_only_the_documents_in_scope(store: BlockingVectorStore) -> None:
    mine, theirs = new_document(), new_document()
    other_of_mine = new_document(mine.owner_id)
    chunks = [chunk(mine, 0), chunk(theirs, 0), chunk(other_of_mine, 0)]
    store.upsert(chunks, [[1.0, 0.0, 0.0]] * 3)
    assert ids(store.query([1.0, 0.0, 0.0], [mine], top_k=10)) == [chunks[0].id]
    assert store.query([1.0, 0.0, 0.0], [new_document()], top_k=10) == []


def test_hits_come_best_first_across_owners_with_cosine_similarities(
    store: BlockingVectorStore,
) -> None:
    own, shared = new_document(), new_document()
    chunks = [chunk(own, 0), chunk(own, 1), chunk(shared, 0)]
    store.upsert(chunks, [[0.0, 1.0, 0.0], [1.0, 0.1, 0.0], [1.0, 0.5, 0.0]])
    hits = store.query([1.0, 0.0, 0.0], [own, shared], top_k=2)
    assert ids(hits) == [chunks[1].id, chunks[2].id]
    assert hits[0].similarity == pytest.approx(1 / (1.01**0.5), abs=1e-4)
    similarities = store.similarities([1.0, 0.0, 0.0], [(own, 0), (shared, 0)])
    assert similarities[chunks[0].id] == pytest.approx(0.0, abs=1e-4)
    assert similarities[chunks[2].id] == pytest.approx(1 / (1.25**0.5), abs=1e-4)


def test_nearest_gives_each_owners_closest_chunks_of_any_document_and_version(
    store: BlockingVectorStore,
) -> None:
    first, second = new_document(), new_document()
    also_first = DocumentRef(uuid.uuid4(), first.owner_id, version=2)
    chunks = [chunk(first, 0), chunk(also_first, 0, version=2), chunk(second, 0)]
    store.upsert(chunks, [[0.0, 1.0, 0.0], [1.0, 0.2, 0.0], [1.0, 0.0, 0.0]])
    nobody = uuid.uuid4()
    found = store.nearest([1.0, 0.0, 0.0], [first.owner_id, second.owner_id, nobody], 5)
    assert ids(found[first.owner_id]) == [chunks[1].id, chunks[0].id]
    assert ids(found[second.owner_id]) == [chunks[2].id]
    assert found[first.owner_id][0].chunk.version == 2
    assert found[second.owner_id][0].similarity == pytest.approx(1.0, abs=1e-4)
    assert not found.get(nobody)
    assert ids(store.nearest([1.0, 0.0, 0.0], [first.owner_id], 1)[first.owner_id]) == [
        chunks[1].id
    ]


def test_a_query_answers_from_the_version_asked_for(store: BlockingVectorStore) -> None:
    document = new_document()
    old, new = chunk(document, 0, version=1), chunk(document, 0, version=2)
    store.upsert([old, new], [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    current = DocumentRef(document.id, document.owner_id, version=2)
    assert ids(store.query([1.0, 0.0, 0.0], [current], top_k=5)) == [new.id]
    store.delete_document(current, except_version=2)
    assert store.count(current) == 1


def test_upserts_replace_and_deletes_remove_one_document(store: BlockingVectorStore) -> None:
    kept, gone = new_document(), new_document()
    gone = DocumentRef(gone.id, kept.owner_id)
    store.upsert([chunk(kept, 0), chunk(gone, 0)], [[1.0, 0, 0], [1.0, 0, 0]])
    store.upsert([chunk(kept, 0)], [[0.0, 1.0, 0]])  # the same chunk again: replaced
    assert store.count() == 2 and store.count(kept) == 1
    store.delete_document(gone)
    store.delete_document(new_document())  # a document never stored is no error
    assert store.count(gone) == 0 and store.count(kept) == 1
    assert store.read([chunk(kept, 0)])[0].id == chunk(kept, 0).id


def test_reset_empties_the_store_and_it_answers_pings(store: BlockingVectorStore) -> None:
    store.ping()
    store.upsert([chunk(new_document(), 0)], [[1.0, 0.0, 0.0]])
    store.reset_collection()
    assert store.count() == 0
    store.ping()


def test_a_copied_document_answers_from_its_new_owner_with_its_vectors(
    store: BlockingVectorStore,
) -> None:
    document, stays = new_document(), new_document()
    stays = DocumentRef(stays.id, document.owner_id)
    store.upsert(
        [chunk(document, 0), chunk(document, 1, version=2), chunk(stays, 0)],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
    )
    heir = uuid.uuid4()
    assert store.copy_document(document, heir) == 2
    assert store.copy_document(document, heir) == 2  # again: the same chunks, not more
    moved = DocumentRef(document.id, heir)
    hits = store.query([1.0, 0.0, 0.0], [moved], top_k=5)
    assert ids(hits) == [chunk(moved, 0).id] and hits[0].similarity > 0.99
    assert hits[0].chunk.owner_id == heir
    assert store.count(DocumentRef(document.id, heir, version=2)) == 1
    assert store.count(document) == 1, "the old owner's copy stays until its collection goes"
    store.delete_owner(document.owner_id)
    assert store.count(document) == 0 and store.count(stays) == 0
    assert store.count(moved) == 1


def test_deleting_an_owner_removes_every_chunk_of_theirs_only(
    store: BlockingVectorStore,
) -> None:
    gone, kept = new_document(), new_document()
    store.upsert([chunk(gone, 0), chunk(gone, 1), chunk(kept, 0)], [[1.0, 0, 0]] * 3)
    store.delete_owner(gone.owner_id)
    store.delete_owner(uuid.uuid4())  # an owner who never stored anything is no error
    assert store.count(gone) == 0 and store.count(kept) == 1 and store.count() == 1
    store.upsert([chunk(gone, 0)], [[1.0, 0, 0]])  # the owner's collection comes back on use
    assert store.count(gone) == 1
