"""Questions and documents in other languages (issue 41): each chunk is indexed in its own
language, a question is read in its own, the names it shares with a passage in another language
count as evidence for the match floor, and a connected model's translation is searched too."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from docchat.config import TranslationSettings
from docchat.ingestion import upgrade
from docchat.ingestion.worker import IngestionWorker
from docchat.main import doctor
from docchat.main.app import attach_components
from docchat.main.components import Components
from docchat.retrieval.models import INDEX_VERSION, DocumentChunk
from docchat.retrieval.passage_glosses import PassageGlosses
from docchat.retrieval.word_by_word import Glossary
from tests.support.chat import ask
from tests.support.documents import upload, upload_and_process, vector_ref
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

COMET = (
    "The comet Virelith was first seen over Duskmoor by the lighthouse keeper Ada Brenn on a "
    "cold night in March 1887. She wrote in the logbook that its tail stretched across a third "
    "of the sky, and the observatory at Kestrel Point confirmed the sighting two days later."
)
BAKERY = (
    "Sourdough loaves proof for fourteen hours in the cold room before baking. The starter is "
    "fed twice a day with rye flour and water, and the ovens are heated to 250 degrees."
)
GERMAN = (
    "Die Fähre nach Helsinki legt jeden Morgen um acht Uhr am Westhafen ab. Die Überfahrt "
    "dauert zwei Stunden, und Fahrkarten gibt es am Schalter im Terminal."
)
CHINESE = "全新世莱茵河三角洲大约在八千年前开始形成。河流的流速在整治工程之后明显增加。"
VOLCANO = "维苏威火山在1781年爆发了。火山灰覆盖了附近的村庄。"


def _translating(components: Components, on: bool) -> Components:
    translation = components.settings.translation.model_copy(update={"translate_questions": on})
    return dataclasses.replace(
        components, settings=components.settings.model_copy(update={"translation": translation})
    )


def _built_in_model(components: Components) -> Components:
    llm = components.settings.llm.model_copy(update={"builtin": True})
    return dataclasses.replace(
        components, settings=components.settings.model_copy(update={"llm": llm})
    )


def _serve_built_in_model(app: FastAPI, components: Components) -> None:
    """The app answers as with the built-in demo model (no translating model), once its
    dictionaries are open."""
    built_in = _built_in_model(components)
    attach_components(app, built_in)
    assert built_in.translator.glossary.wait_ready(120), "the FreeDict dictionaries are installed"


async def _library(client: httpx.AsyncClient, components: Components) -> dict[str, Any]:
    headers = await auth_headers(client)
    comet = await upload_and_process(client, components, headers, "comet.txt", COMET.encode())
    await upload_and_process(client, components, headers, "bakery.txt", BAKERY.encode())
    return {"headers": headers, "comet": comet}


async def test_a_german_question_finds_the_english_passage_holding_its_names(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Reported: asked over all documents in German, with the document's own proper nouns, the
    answer was general and had no sources: the question's German words, absent from every
    English passage, counted against the match as if they were missing."""
    attach_components(app, _translating(components, on=False))
    library = await _library(client, components)
    fresh_llm.script("Ada Brenn sah ihn zuerst [1].")
    response = await ask(
        client, library["headers"], "Wer sah den Kometen Virelith über Duskmoor zuerst?"
    )
    answer = response.json()["assistant_message"]
    assert answer["meta"]["grounded"] is True, answer["meta"]
    assert [source["document_name"] for source in answer["sources"]][:1] == ["comet.txt"]
    assert len(fresh_llm.requests) == 1  # translation off: the answer's call only


async def test_a_question_about_something_absent_stays_general_in_german(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    attach_components(app, _translating(components, on=False))
    library = await _library(client, components)
    fresh_llm.script("Paris.")
    response = await ask(client, library["headers"], "Was ist die Hauptstadt von Frankreich?")
    answer = response.json()["assistant_message"]
    assert answer["meta"]["grounded"] is False
    assert not answer["sources"]


async def test_a_connected_model_translates_the_question_for_the_search(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    library = await _library(client, components)
    fresh_llm.script("How long do sourdough loaves proof?", "Vierzehn Stunden [1].")
    response = await ask(client, library["headers"], "Wie lange gehen die Sauerteigbrote?")
    answer = response.json()["assistant_message"]
    # The German words match nothing English; the translation finds the bakery's passage.
    assert answer["meta"]["translated_query"] == "How long do sourdough loaves proof?"
    assert [source["document_name"] for source in answer["sources"]] == ["bakery.txt"]
    translation = fresh_llm.requests[0]["messages"]
    assert "into English" in translation[0]["content"]
    assert translation[1]["content"] == "Wie lange gehen die Sauerteigbrote?"

    calls = len(fresh_llm.requests)
    fresh_llm.script("Fourteen hours [1].")
    english = await ask(client, library["headers"], "How long do sourdough loaves proof?")
    assert "translated_query" not in english.json()["assistant_message"]["meta"]
    assert len(fresh_llm.requests) == calls + 1  # an English question is not translated


async def test_without_a_translating_model_the_dictionaries_translate_the_question(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    compiled_glossary: Path,  # compiled before, not within the wait below (a busy machine)
) -> None:
    """Reported: with the built-in demo model (no translation), a German question about an
    English document found it only through the names it shared with it; these have none."""
    _serve_built_in_model(app, components)
    library = await _library(client, components)
    response = await ask(client, library["headers"], "Wie lange gehen die Sauerteigbrote?")
    answer = response.json()["assistant_message"]
    assert answer["meta"]["translated_by"] == "dictionary"
    assert "sourdough" in answer["meta"]["translated_query"]
    assert [source["document_name"] for source in answer["sources"]] == ["bakery.txt"]
    assert "fourteen hours" in answer["content"]  # quoted, with the built-in model
    # Spanish and French go through Apertium's machine translation (French through Spanish).
    # Searched as asked, the Spanish question matched nothing.
    for question, translated, document in (
        ("¿Cuánto tiempo fermentan los panes de masa madre?", "ferment the breads", "bakery.txt"),
        ("Quel observatoire a confirmé l'observation de la comète ?", "observatory", "comet.txt"),
    ):
        response = await ask(client, library["headers"], question)
        answer = response.json()["assistant_message"]
        assert answer["meta"]["translated_by"] == "apertium"
        assert translated in answer["meta"]["translated_query"]
        assert [source["document_name"] for source in answer["sources"]] == [document]
    # The quote is the sentence its translation matches, not the passage's first: a Chinese
    # question shares no word with any English sentence.
    response = await ask(client, library["headers"], "哪个天文台证实了彗星的观测？")
    answer = response.json()["assistant_message"]
    assert answer["meta"]["translated_by"] == "dictionary"
    assert [source["document_name"] for source in answer["sources"]] == ["comet.txt"]
    assert "Kestrel Point" in answer["content"]
    assert "Kestrel Point" in answer["sources"][0]["highlight"]["text"]
    assert fresh_llm.requests == []

    fresh_llm.script("Die Hauptstadt ist Paris.")
    absent = await ask(client, library["headers"], "Was ist die Hauptstadt von Frankreich?")
    general = absent.json()["assistant_message"]  # glossed too, and still nothing there
    assert general["meta"]["grounded"] is False
    assert not general["sources"]


async def test_a_quote_in_another_language_answers_an_english_question(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    compiled_glossary: Path,  # compiled before, not within the wait below (a busy machine)
) -> None:
    """Found by a newcomer: English questions over a German and a Chinese document quoted the
    right sentence, under "Your documents do not answer this (none of the passages mentions
    crossing)": the verdict looked for the question's English words in the passage's German.
    It reads a passage in another language with its English gloss too."""
    _serve_built_in_model(app, components)
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "faehre.txt", GERMAN.encode())
    await upload_and_process(client, components, headers, "vesuv.txt", VOLCANO.encode())
    for question, document, quoted in (
        ("How long does the crossing to Helsinki take?", "faehre.txt", "zwei Stunden"),
        ("When did the volcano erupt?", "vesuv.txt", "1781"),
    ):
        answer = (await ask(client, headers, question)).json()["assistant_message"]
        meta = answer["meta"]
        assert meta["evidence"] == "answered", (question, meta, answer["content"])
        assert meta["grounded"] is True
        assert [source["document_name"] for source in answer["sources"]][:1] == [document]
        assert quoted in answer["content"]
    assert fresh_llm.requests == []


BRENN = (
    "Ada Brenn kept the Duskmoor lighthouse for forty years. Ada Brenn was born in Duskmoor, "
    "married a fisherman from Duskmoor, and Ada Brenn is buried in the Duskmoor churchyard "
    "beside the lighthouse she kept."
)


async def test_the_translation_ranks_the_passages_the_question_shares_only_names_with(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    compiled_glossary: Path,  # compiled before, not within the wait below (a busy machine)
) -> None:
    """Measured (bench.eval_languages): searched as asked too, a German question ranked first
    any English passage holding its names, here the one about Ada Brenn's life, above the one
    about the comet's tail, whose words only the translation has."""
    _serve_built_in_model(app, components)
    library = await _library(client, components)
    await upload_and_process(client, components, library["headers"], "brenn.txt", BRENN.encode())
    question = "Wie lang war der Schweif des Kometen, den Ada Brenn über Duskmoor sah?"
    response = await ask(client, library["headers"], question)
    answer = response.json()["assistant_message"]
    assert answer["meta"]["translated_by"] == "dictionary"
    assert [source["document_name"] for source in answer["sources"]][:1] == ["comet.txt"]


async def test_a_translated_question_still_finds_passages_in_its_own_language(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    compiled_glossary: Path,  # compiled before, not within the wait below (a busy machine)
) -> None:
    """The question as asked ranks the passages written in its language; its translation
    ranks the others. A German question about a German document beside English ones."""
    _serve_built_in_model(app, components)
    library = await _library(client, components)
    await upload_and_process(client, components, library["headers"], "faehre.txt", GERMAN.encode())
    response = await ask(client, library["headers"], "Wann legt die Fähre nach Helsinki ab?")
    answer = response.json()["assistant_message"]
    assert answer["meta"]["translated_by"] == "dictionary"
    assert [source["document_name"] for source in answer["sources"]][:1] == ["faehre.txt"]
    assert "acht Uhr" in answer["content"]


async def test_documents_in_german_and_chinese_are_indexed_in_their_language(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    headers = await auth_headers(client)
    german = await upload_and_process(client, components, headers, "faehre.txt", GERMAN.encode())
    chinese = await upload_and_process(client, components, headers, "rhein.txt", CHINESE.encode())
    languages = dict(
        (await session.execute(select(DocumentChunk.document_id, DocumentChunk.language))).all()
    )
    assert languages[uuid.UUID(german["id"])] == "german"
    assert languages[uuid.UUID(chinese["id"])] == "simple"

    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(german), vector_ref(chinese)]
    # German stemming: "Fähren" and "Überfahrten" are the passage's "Fähre" and "Überfahrt"
    # (read as English, no word of the question was in it).
    found = await lexical.search(scope, "Gibt es Fähren mit kurzen Überfahrten?", 2)
    assert [str(hit.chunk.document_id) for hit in found] == [german["id"]]
    # Chinese is read as pairs of characters: a question's words are found inside the text.
    found = await lexical.search(scope, "莱茵河三角洲是什么时候开始形成的？", 2)
    assert [str(hit.chunk.document_id) for hit in found] == [chinese["id"]]


BRIDGE = (
    "Die Lindenhagener Brücke über die Warnow wurde zwischen 1887 und 1891 gebaut. Ihr "
    "Baumeister war Konrad Kellmünz aus Ulm, der später auch den Bahnhof der Stadt entwarf."
)


async def test_a_german_compound_is_found_by_its_parts(
    client: httpx.AsyncClient, components: Components
) -> None:
    """Issue 69: the German configuration stems "Baumeister" whole, so a question naming the
    master ("Meister", as an English question glossed into German does) shared no word with
    the passage; a German chunk is now indexed with its compounds' parts too."""
    headers = await auth_headers(client)
    bridge = await upload_and_process(client, components, headers, "bruecke.txt", BRIDGE.encode())
    ferry = await upload_and_process(client, components, headers, "faehre.txt", GERMAN.encode())
    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(bridge), vector_ref(ferry)]
    found = await lexical.search(scope, "Wer war der Meister?", 2)
    assert [str(hit.chunk.document_id) for hit in found] == [bridge["id"]]
    # The passage itself and its length for BM25 are its own.
    assert found[0].chunk.text == BRIDGE


@dataclasses.dataclass
class _WatchedGlossary(Glossary):
    """The run's dictionaries, noting at each wait for them while they are not open yet (a
    compile's minute on a new installation) whether a transaction of the test's connection
    (every session's, here) was open."""

    connection: AsyncConnection | None = None
    waited_in_a_transaction: list[bool] = dataclasses.field(default_factory=list)

    def wait_ready(self, timeout: float | None = None) -> bool:
        assert self.connection is not None
        if not self.directions:
            in_transaction = self.connection.sync_connection.in_nested_transaction()
            self.waited_in_a_transaction.append(in_transaction)
        return super().wait_ready(timeout)


async def test_the_worker_waits_for_the_dictionaries_outside_its_transaction(
    client: httpx.AsyncClient,
    components: Components,
    connection: AsyncConnection,
    compiled_glossary: Path,
) -> None:
    """A passage's gloss waits for the dictionaries, which a new installation compiles for a
    minute: the wait came inside the transaction that holds the job's row, so the job's
    heartbeats could not be written and another worker could take it over."""
    folder = TranslationSettings(_env_file=None).dictionary_folder  # type: ignore[call-arg]
    glossary = _WatchedGlossary(compiled_glossary, folder, connection=connection)
    parts = dataclasses.replace(components)
    parts.glosses = PassageGlosses(glossary)
    headers = await auth_headers(client)
    rhine = await upload(client, headers, "rhein.txt", CHINESE.encode())
    await IngestionWorker(parts).run_until_idle()
    listed = await client.get(f"/api/v1/documents/{rhine.json()['id']}", headers=headers)
    assert listed.json()["status"] == "completed"
    assert glossary.waited_in_a_transaction and not any(glossary.waited_in_a_transaction)


async def _as_an_earlier_index_wrote(
    session: AsyncSession, document_id: str, version: int, configuration: str
) -> None:
    """The document's rows as index `version` wrote them: its text read by `configuration`
    alone (no compounds' parts, no gloss)."""
    await session.execute(
        sa.text(
            "UPDATE document_chunks SET index_version = :version, "
            "tsv = docchat_folded(to_tsvector(CAST(:configuration AS regconfig), text)) "
            "WHERE document_id = :id"
        ),
        {"id": uuid.UUID(document_id), "version": version, "configuration": configuration},
    )
    await session.commit()


async def test_german_rows_of_an_earlier_index_get_their_parts_when_the_service_starts(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """Migration 0034: German rows written before compounds were split are written again by
    the upgrade the service runs at its start (`docchat reindex --layout-only` at once)."""
    headers = await auth_headers(client)
    bridge = await upload_and_process(client, components, headers, "bruecke.txt", BRIDGE.encode())
    ferry = await upload_and_process(client, components, headers, "faehre.txt", GERMAN.encode())
    # The row as the previous version wrote it: the compound stemmed whole, version 1.
    await _as_an_earlier_index_wrote(session, bridge["id"], 1, "german")
    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(bridge), vector_ref(ferry)]
    assert await lexical.search(scope, "Wer war der Meister?", 2) == []

    outcome = await upgrade.bring_up_to_date(components)
    assert outcome.reindexed >= 1 and outcome.finished
    found = await lexical.search(scope, "Wer war der Meister?", 2)
    assert [str(hit.chunk.document_id) for hit in found] == [bridge["id"]]
    versions = await session.execute(
        select(DocumentChunk.index_version).where(
            DocumentChunk.document_id == uuid.UUID(bridge["id"])
        )
    )
    assert set(versions.scalars()) == {INDEX_VERSION}
    # Nothing is left: the next start writes nothing again.
    assert (await upgrade.bring_up_to_date(components)).reindexed == 0


async def test_a_chinese_passage_is_read_in_english_by_bm25_and_the_embedder(
    client: httpx.AsyncClient, components: Components
) -> None:
    """Issue 69: an English question shared no word with a Chinese passage (read as pairs of
    characters) and the bundled embedder cannot read Chinese; a Chinese chunk is now indexed
    with its dictionary gloss, read as English, and embedded as that gloss."""
    headers = await auth_headers(client)
    rhine = await upload_and_process(client, components, headers, "rhein.txt", CHINESE.encode())
    bakery = await upload_and_process(client, components, headers, "bakery.txt", BAKERY.encode())
    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(rhine), vector_ref(bakery)]
    found = await lexical.search(scope, "When did the delta of the river start to form?", 2)
    assert [str(hit.chunk.document_id) for hit in found][:1] == [rhine["id"]]
    assert found[0].chunk.text == CHINESE  # the passage shown is its own text
    # The embedder reads the gloss; an English passage is embedded as it was.
    pipeline = IngestionWorker(components).pipeline
    embedded = pipeline.embedded(found[0].chunk)
    assert "delta" in embedded and "莱茵河" not in embedded
    english = (await lexical.search(scope, "How long do the sourdough loaves proof?", 1))[0].chunk
    assert pipeline.embedded(english) == pipeline.indexed(english)


async def test_a_german_passage_is_found_by_the_english_of_its_words(
    client: httpx.AsyncClient, components: Components
) -> None:
    """Issue 69: an English question without a name shared no word with a German passage; the
    passage is now indexed with its English gloss too, and still embedded as its own text (the
    bundled embedder reads German better than a gloss of it)."""
    headers = await auth_headers(client)
    ferry = await upload_and_process(client, components, headers, "faehre.txt", GERMAN.encode())
    bakery = await upload_and_process(client, components, headers, "bakery.txt", BAKERY.encode())
    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(ferry), vector_ref(bakery)]
    found = await lexical.search(scope, "How many hours does the crossing last?", 2)
    assert [str(hit.chunk.document_id) for hit in found][:1] == [ferry["id"]]
    pipeline = IngestionWorker(components).pipeline
    assert pipeline.embedded(found[0].chunk) == pipeline.indexed(found[0].chunk)


async def test_chinese_rows_of_an_earlier_index_get_their_gloss_when_the_service_starts(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """Migration 0035: Chinese rows written before they were glossed are written again by the
    upgrade at the service's start (their vectors when the document is read again)."""
    headers = await auth_headers(client)
    rhine = await upload_and_process(client, components, headers, "rhein.txt", CHINESE.encode())
    await _as_an_earlier_index_wrote(session, rhine["id"], 2, "simple")
    lexical = components.retriever.lexical
    assert lexical is not None
    question = "When did the delta of the river start to form?"
    assert await lexical.search([vector_ref(rhine)], question, 1) == []
    # `docchat doctor` tells an administrator, before the service's start writes them again.
    documents = {"documents": doctor.CHECKS["documents"]}
    (waiting,) = await doctor.examine(doctor.subjects_of(components), documents)
    assert waiting.status is doctor.Status.warning
    assert "written by an earlier version of the index" in waiting.found

    outcome = await upgrade.bring_up_to_date(components)
    assert outcome.reindexed >= 1 and outcome.finished
    found = await lexical.search([vector_ref(rhine)], question, 1)
    assert [str(hit.chunk.document_id) for hit in found] == [rhine["id"]]
    assert (await upgrade.bring_up_to_date(components)).reindexed == 0
    (done,) = await doctor.examine(doctor.subjects_of(components), documents)
    assert "earlier version of the index" not in done.found


async def test_an_english_question_finds_a_german_passage_by_the_names_it_shares(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Issue 67: asked in English over all documents, the German document that answers was no
    longer found: the German stemmer folds umlauts and strips endings (`kellmunz`,
    `lindenhag`) where the English one keeps them (`kellmünz`, `lindenhagen`), so even the
    names the question shares with it did not match in BM25."""
    attach_components(app, _translating(components, on=False))
    library = await _library(client, components)
    headers = library["headers"]
    bridge = await upload_and_process(client, components, headers, "bruecke.txt", BRIDGE.encode())
    lexical = components.retriever.lexical
    assert lexical is not None
    scope = [vector_ref(library["comet"]), vector_ref(bridge)]
    for question in (
        "Which bridge did Kellmünz build?",
        "Who was the master builder of the Lindenhagen bridge?",
    ):
        found = await lexical.search(scope, question, 2)
        assert [str(hit.chunk.document_id) for hit in found] == [bridge["id"]], question
        assert found[0].coverage > 0.5, question
        fresh_llm.script("Konrad Kellmünz [1].")
        answer = (await ask(client, headers, question)).json()["assistant_message"]
        assert answer["meta"]["grounded"] is True, (question, answer["meta"])
        assert [source["document_name"] for source in answer["sources"]] == ["bruecke.txt"]
