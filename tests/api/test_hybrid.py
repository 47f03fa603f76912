"""Hybrid retrieval: BM25 in PostgreSQL beside the vectors, fused into one ranking."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.models import Document
from docchat.ingestion.worker import IngestionWorker
from docchat.main.app import attach_components
from docchat.main.components import Components
from docchat.retrieval import lexical as lexical_module
from docchat.retrieval.fusion import Fusion, reciprocal_rank_fusion
from docchat.retrieval.index import DocumentRef
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.models import DocumentChunk
from docchat.retrieval.retriever import Retriever
from tests.support.chat import ask
from tests.support.documents import upload_and_process, vector_ref
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

# Ten paragraphs about the same thing, each about a thousand characters (one chunk each),
# told apart only by a code that embeddings barely see.
CODES = [f"QX-{1000 + 37 * i}" for i in range(10)]


def fault_manual() -> str:
    paragraphs = []
    for index, code in enumerate(CODES):
        body = (
            f"Fault {code} is raised by the pump controller when sensor {index} reports a "
            "reading outside its band. The operator should stop the pump, wait for the "
            "pressure to settle, check the seals and the intake filter, and restart it from "
            "the panel. If the fault comes back within an hour, call the maintenance crew. "
        )
        paragraphs.append((body * 3)[:950])
    return "\n\n".join(paragraphs)


def test_reciprocal_rank_fusion_rewards_agreement_and_weights() -> None:
    # b: 1/62 + 1/61; c: 2/63; a: 1/61; d: 1/62.
    assert reciprocal_rank_fusion([["a", "b", "c"], ["b", "d", "c"]], [1, 1], 60) == [
        "b",
        "c",
        "a",
        "d",
    ]
    # A ranking with no weight cannot reorder anything.
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]], [1, 0], 60)[:2] == ["a", "b"]
    assert reciprocal_rank_fusion([[], []], [1, 1], 60) == []


def _lexical(components: Components) -> LexicalIndex:
    lexical = components.retriever.lexical
    assert lexical is not None, "hybrid search is on by default"
    return lexical


def _exact_and_wide(components: Components) -> tuple[LexicalIndex, LexicalIndex]:
    """The service's BM25, and the same forced on the wide path with every word common (as
    for a shared library), whatever the scope's size."""
    exact = _lexical(components)
    return exact, dataclasses.replace(exact, exact_scope_chunks=0, candidate_budget=1)


async def _analysed_uploads(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    headers: dict[str, str],
    lines: dict[str, str],
) -> list[dict[str, Any]]:
    """A document of each line (said twelve times), then the statistics the wide path reads."""
    documents = [
        await upload_and_process(client, components, headers, name, (line * 12).encode())
        for name, line in lines.items()
    ]
    await session.execute(text("ANALYZE document_chunks"))
    await session.commit()
    return documents


async def _manual(
    client: httpx.AsyncClient, components: Components
) -> tuple[dict[str, str], dict[str, Any]]:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "faults.md", fault_manual().encode()
    )
    assert document["status"] == "completed" and document["chunk_count"] == len(CODES)
    return headers, document


async def test_bm25_ranks_the_chunk_with_the_exact_code_first(
    client: httpx.AsyncClient, components: Components
) -> None:
    _, document = await _manual(client, components)
    lexical = _lexical(components)
    scope = [vector_ref(document)]
    for index, code in enumerate(CODES):
        hits = await lexical.search(scope, f"What should I do about fault {code}?", 5)
        assert hits[0].chunk.chunk_index == index, (code, hits)
        assert hits[0].score > hits[1].score  # words every chunk has add almost nothing
    # Stop words only: no lexemes, no hits, no error.
    assert await lexical.search(scope, "what is the", 5) == []


async def test_lexical_search_stays_in_scope_and_forgets_deleted_documents(
    client: httpx.AsyncClient, components: Components
) -> None:
    _, mine = await _manual(client, components)
    other_headers, theirs = await _manual(client, components)
    lexical = _lexical(components)
    hits = await lexical.search([vector_ref(mine)], f"fault {CODES[3]}", 20)
    assert hits and {hit.chunk.document_id for hit in hits} == {uuid.UUID(mine["id"])}
    unknown = DocumentRef(uuid.uuid4(), uuid.uuid4())
    assert await lexical.search([unknown], f"fault {CODES[3]}", 20) == []

    url = f"/api/v1/documents/{theirs['id']}"
    assert (await client.delete(url, headers=other_headers)).status_code == 204
    assert await lexical.search([vector_ref(theirs)], f"fault {CODES[3]}", 20) == []


async def test_reprocessing_replaces_the_lexical_rows(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers, document = await _manual(client, components)
    lexical = _lexical(components)
    before = await lexical.search([vector_ref(document)], "pump seals", 50)
    url = f"/api/v1/documents/{document['id']}/reprocess"
    assert (await client.post(url, headers=headers)).status_code == 202
    await IngestionWorker(components).run_until_idle()
    after = await lexical.search([vector_ref(document)], "pump seals", 50)
    assert len(after) == len(before) == len(CODES)


async def test_answers_cite_the_chunk_named_by_its_code(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, app: Any
) -> None:
    headers, _ = await _manual(client, components)
    for index in (2, 6, 9):
        fresh_llm.script("Stop the pump and check the seals [1].")
        answer = await ask(client, headers, f"What does fault {CODES[index]} mean?")
        message = answer.json()["assistant_message"]
        assert message["meta"]["retrieval_mode"] == "hybrid"
        assert CODES[index] in message["sources"][0]["content_preview"]

    search = components.settings.search.model_copy(update={"hybrid": False})
    settings = components.settings.model_copy(update={"search": search})
    attach_components(app, dataclasses.replace(components, settings=settings))
    fresh_llm.script("Stop the pump [1].")
    answer = await ask(client, headers, f"What does fault {CODES[6]} mean?")
    assert answer.json()["assistant_message"]["meta"]["retrieval_mode"] == "vector"


async def test_bm25_coverage_is_the_share_of_the_question_a_chunk_holds(
    client: httpx.AsyncClient, components: Components
) -> None:
    _, document = await _manual(client, components)
    lexical = _lexical(components)
    scope = [vector_ref(document)]
    exact = await lexical.search(scope, f"fault {CODES[4]} pump", 3)
    assert exact[0].chunk.chunk_index == 4
    # Every word of the question is in the chunk (some more than once): about 1.
    assert 0.9 <= exact[0].coverage <= 1.6
    assert exact[1].coverage < 0.5 * exact[0].coverage  # the code is most of the weight
    # Words no chunk holds weigh in as the rarest words there can be.
    vague = await lexical.search(scope, "pump zanzibar quokka", 3)
    assert vague and vague[0].coverage < 0.2


async def test_chunk_headers_let_a_passage_be_found_by_its_document_title(
    client: httpx.AsyncClient, components: Components
) -> None:
    text = b"It was completed in 1932 by the engineer Marta Lindqvist."
    for header in (False, True):
        indexing = components.settings.indexing.model_copy(update={"chunk_header": header})
        with_setting = dataclasses.replace(
            components, settings=components.settings.model_copy(update={"indexing": indexing})
        )
        headers = await auth_headers(client)
        document = await upload_and_process(
            client, with_setting, headers, "Zephyr_suspension_bridge.md", text
        )
        hits = await _lexical(with_setting).search([vector_ref(document)], "zephyr bridge", 3)
        assert bool(hits) is header
        if header:  # the stored text is the passage's own, without the header
            assert hits[0].chunk.text == text.decode()


async def test_documents_keep_their_word_totals_for_bm25_statistics(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """BM25's scope size and average length come from per-document totals: they must match
    the chunks, after processing and after reprocessing."""
    headers, document = await _manual(client, components)

    async def totals() -> tuple[int | None, int]:
        stored = await session.scalar(
            select(Document.token_count).where(Document.id == uuid.UUID(document["id"]))
        )
        words = await session.scalar(
            select(func.sum(DocumentChunk.tokens)).where(
                DocumentChunk.document_id == uuid.UUID(document["id"])
            )
        )
        return stored, int(words or 0)

    stored, words = await totals()
    assert stored == words > 0
    url = f"/api/v1/documents/{document['id']}/reprocess"
    assert (await client.post(url, headers=headers)).status_code == 202
    await IngestionWorker(components).run_until_idle()
    session.expire_all()
    stored, words = await totals()
    assert stored == words > 0


async def test_a_wide_scope_picks_candidates_by_rare_words_and_still_counts_common_ones(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """The wide-scope path (as for a shared library), forced on a small one: "pump" is in
    every chunk and too common to pick candidates, the fault code picks, and the ranking and
    the scope are what the exact path gives."""
    _, mine = await _manual(client, components)
    _, theirs = await _manual(client, components)  # the same words, another owner's
    await session.execute(text("ANALYZE document_chunks"))
    await session.commit()
    exact, wide = _exact_and_wide(components)
    scope = [vector_ref(mine)]
    for index, code in enumerate(CODES):
        question = f"What should I do about fault {code} on the pump?"
        hits = await wide.search(scope, question, 5)
        assert [hit.chunk.chunk_index for hit in hits] == [index], hits  # only the code picks
        assert hits[0].chunk.document_id == uuid.UUID(mine["id"])
        reference = (await exact.search(scope, question, 5))[0]
        assert reference.chunk.id == hits[0].chunk.id
        # "pump" still counts (estimated, not counted): a score above the code's alone.
        alone = (await wide.search(scope, f"fault {code}", 5))[0]
        assert hits[0].score > alone.score
    # Every word common: the rarest still picks, so a question is never left without hits.
    hits = await wide.search(scope, "pump seals", 20)
    assert len(hits) == len(CODES)
    assert {hit.chunk.document_id for hit in hits} == {uuid.UUID(mine["id"])}
    assert theirs["id"] != mine["id"]


async def test_a_too_common_rarest_word_picks_with_its_partner_then_alone(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """Wide path, every word of the question common: candidates must hold both of its rarest
    words; when fewer chunks than asked for hold both, the rarest alone picks. Either way the
    passages are the exact ranking's."""
    headers, manual = await _manual(client, components)
    # Each of two more documents holds only one of the question's words.
    harbour = {
        "pumps.txt": "The harbour master checks the bilge pump of every boat in spring. ",
        "seals.txt": "Grey seals bask on the rocks of the outer harbour at low tide. ",
    }
    others = await _analysed_uploads(client, components, session, headers, harbour)
    exact, wide = _exact_and_wide(components)
    scope = [vector_ref(manual)] + [vector_ref(document) for document in others]
    question = "pump seals"
    # Five asked: the manual's chunks hold both words and are the exact top five.
    paired = [hit.chunk.id for hit in await wide.search(scope, question, 5)]
    assert paired == [hit.chunk.id for hit in await exact.search(scope, question, 5)]
    assert all(key.startswith(manual["id"]) for key in paired)
    # More asked than the ten chunks holding both: the rarest word alone picks, so chunks
    # holding only it join, ranked below the manual's (as in the exact ranking).
    alone = [hit.chunk.id for hit in await wide.search(scope, question, 20)]
    assert len(alone) > len(CODES)
    assert all(key.startswith(manual["id"]) for key in alone[: len(CODES)])
    assert not any(key.startswith(manual["id"]) for key in alone[len(CODES) :])
    assert set(alone) <= {hit.chunk.id for hit in await exact.search(scope, question, 40)}


async def test_a_too_common_pair_widens_to_chunks_holding_any_other_word_of_the_question(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """Wide path, three common words: one chunk holds the rarest with its partner, too few
    for the two asked, so chunks holding the rarest and any other word of the question are
    read next (not every chunk holding the rarest). The passages are the exact ranking's."""
    headers = await auth_headers(client)
    lines = {
        "both.txt": "The zorbel and the mintaro meet at the quay. ",
        "other.txt": "The zorbel sleeps beside the plover. ",
        **{f"common-{i}.txt": f"The mintaro follows plover {i}. " for i in range(3)},
    }
    documents = await _analysed_uploads(client, components, session, headers, lines)
    exact, wide = _exact_and_wide(components)
    scope = [vector_ref(document) for document in documents]
    question = "zorbel mintaro plover"
    hits = await wide.search(scope, question, 2)
    expected = await exact.search(scope, question, 2)
    assert [hit.chunk.id for hit in hits] == [hit.chunk.id for hit in expected]
    assert {str(hit.chunk.document_id) for hit in hits} == {
        documents[0]["id"],
        documents[1]["id"],
    }


async def test_a_wide_scopes_totals_are_reused_a_small_ones_read_each_time(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, manual = await _manual(client, components)
    _, other = await _manual(client, components)
    lexical = dataclasses.replace(_lexical(components))  # an empty cache of its own
    monkeypatch.setattr(lexical_module, "CACHED_SCOPE_DOCUMENTS", 2)
    wide, small = [vector_ref(manual), vector_ref(other)], [vector_ref(manual)]
    question = f"fault {CODES[0]}"
    wide_before = (await lexical.search(wide, question, 1))[0].score
    small_before = (await lexical.search(small, question, 1))[0].score

    # The manual grows on paper: a small scope sees it at once, a wide one after a while.
    await session.execute(
        update(Document)
        .where(Document.id == uuid.UUID(manual["id"]))
        .values(chunk_count=Document.chunk_count * 50, token_count=Document.token_count * 50)
    )
    await session.commit()
    assert (await lexical.search(small, question, 1))[0].score != small_before
    assert (await lexical.search(wide, question, 1))[0].score == wide_before
    monkeypatch.setattr(lexical_module, "SCOPE_TOTALS_TTL_SECONDS", 0.0)
    assert (await lexical.search(wide, question, 1))[0].score != wide_before


@pytest.mark.parametrize("exact_scope_chunks", [100_000, 0], ids=["small scope", "wide scope"])
async def test_bm25_is_planned_for_each_question_never_generically(
    client: httpx.AsyncClient,
    components: Components,
    session: AsyncSession,
    exact_scope_chunks: int,
) -> None:
    """PostgreSQL may switch a prepared statement to a generic plan after five runs; for BM25
    that plan cannot see how common the words are or how wide the scope is (over a shared
    library it read every chunk of the scope through the primary key)."""
    _, document = await _manual(client, components)
    lexical = dataclasses.replace(_lexical(components), exact_scope_chunks=exact_scope_chunks)
    before = await _bm25_plans(session)
    for code in CODES * 2:
        assert await lexical.search([vector_ref(document)], f"fault {code} pump", 5)
    generic, custom = (a - b for a, b in zip(await _bm25_plans(session), before, strict=True))
    assert (generic, custom) == (0, len(CODES) * 2)


async def _bm25_plans(session: AsyncSession) -> tuple[int, int]:
    """The generic and the custom plans made so far for the BM25 statements prepared on the
    tests' connection (their sessions share one)."""
    row = (
        await session.execute(
            text(
                "SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0) "
                "FROM pg_prepared_statements WHERE statement LIKE '%WITH question AS%' "
                "AND statement NOT LIKE '%pg_prepared_statements%'"
            )
        )
    ).one()
    return int(row[0]), int(row[1])


async def test_passages_the_vectors_find_get_their_text_from_postgresql(
    client: httpx.AsyncClient, components: Components
) -> None:
    _, document = await _manual(client, components)
    ref = vector_ref(document)
    lexical = _lexical(components)
    held = {chunk.chunk_index: chunk for chunk in await lexical.document_chunks([ref])}
    # Vector search alone: no passage comes with its text from BM25's rows.
    vectors = Retriever(
        components.embedder, components.vector_index, passages=lexical, similarity_floor=-1.0
    )
    question = f"What should I do about fault {CODES[2]}?"
    found = (await vectors.search(question, [ref], len(CODES), require_match=False)).chunks
    assert len(found) == len(CODES)
    # Whole, as PostgreSQL holds them: text, page, location, file name.
    assert all(hit.chunk == held[hit.chunk.chunk_index] for hit in found)

    # A passage whose text PostgreSQL no longer holds as named is left out, not shown empty:
    # one in the vector index without a row, and rows asked for under another version.
    orphan = dataclasses.replace(held[0], chunk_index=len(CODES), text="")
    components.vector_store.upsert([orphan], components.embedder.embed([question]))
    found = (await vectors.search(question, [ref], len(CODES) + 1, require_match=False)).chunks
    assert len(found) == len(CODES) and all(hit.chunk.text for hit in found)
    later = [dataclasses.replace(chunk, version=chunk.version + 1) for chunk in held.values()]
    assert await lexical.passages_of(later) == {}


@pytest.mark.parametrize(("method", "read"), [("adaptive", 5), ("convex", 2), ("rrf", 2)])
async def test_adaptive_fusion_reads_bm25_deeper_than_it_proposes(
    client: httpx.AsyncClient,
    components: Components,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    read: int,
) -> None:
    _, document = await _manual(client, components)
    ref = vector_ref(document)
    lexical = _lexical(components)
    limits: list[int] = []
    search = lexical.search

    async def counted(documents: Any, question: str, limit: int, *more: Any) -> Any:
        limits.append(limit)
        return await search(documents, question, limit, *more)

    monkeypatch.setattr(lexical, "search", counted)
    retriever = Retriever(
        components.embedder,
        components.vector_index,
        passages=lexical,
        similarity_floor=-1.0,
        lexical=lexical,
        fusion=Fusion(method=method, candidates=2),  # type: ignore[arg-type]
    )
    question = f"What should I do about fault {CODES[6]}?"
    found = (await retriever.search(question, [ref], 2, require_match=False)).chunks
    # Two candidates from each side at most; the deeper results only lent their scores.
    assert limits == [read]
    assert found[0].chunk.chunk_index == 6 and len(found) == 2
