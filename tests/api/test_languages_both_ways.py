"""Questions and documents in any pair of languages (issue 69): a question is searched in the
languages of the documents in its scope (translated with no model here: the built-in demo
model's path), a name matches with or without its accents whichever language read it, and
`meta` says which languages were searched and in which the question was searched as written."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.documents.scopes import ScopeRule
from docchat.documents.scopes_repository import IN_SCOPE
from docchat.main.app import attach_components
from docchat.main.components import Components
from docchat.retrieval.index import DocumentScope, ScopeCondition
from docchat.retrieval.models import DocumentChunk
from tests.support.chat import ask
from tests.support.documents import upload_and_process, vector_ref
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

FERRY = (
    "Die Fähre nach Helsinki legt jeden Morgen um acht Uhr am Westhafen ab. Die Überfahrt "
    "dauert zwei Stunden, und Fahrkarten gibt es am Schalter im Terminal."
)
BAKERY = (
    "Die Sauerteigbrote gehen vierzehn Stunden im Kühlraum, bevor sie gebacken werden. Der "
    "Sauerteig wird zweimal am Tag mit Roggenmehl und Wasser gefüttert."
)
ITALIAN = (
    "Il traghetto per l'isola parte ogni mattina alle otto dal porto vecchio. La traversata "
    "dura due ore e i biglietti si comprano allo sportello del terminal."
)


def _built_in_model(components: Components) -> Components:
    llm = components.settings.llm.model_copy(update={"builtin": True})
    return dataclasses.replace(
        components, settings=components.settings.model_copy(update={"llm": llm})
    )


async def test_an_english_question_finds_german_documents_in_german(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    compiled_glossary: Path,
) -> None:
    """Reported: English questions over German documents found 1 in 5; an English question
    was never searched in the documents' language, and shares no word with them here."""
    built_in = _built_in_model(components)
    attach_components(app, built_in)
    assert built_in.translator.glossary.wait_ready(120), "FreeDict's eng-deu is installed"
    assert "de" in built_in.translator.targets
    headers = await auth_headers(client)
    await upload_and_process(client, built_in, headers, "faehre.txt", FERRY.encode())
    await upload_and_process(client, built_in, headers, "baeckerei.txt", BAKERY.encode())
    response = await ask(client, headers, "When does the ferry leave in the morning?")
    answer = response.json()["assistant_message"]
    meta = answer["meta"]
    assert meta["languages_searched"] == ["en", "de"]
    assert "searched_as_written" not in meta
    assert meta["translated_by"] == "dictionary"
    assert "Fähre" in meta["translated_query"]
    assert [source["document_name"] for source in answer["sources"]][:1] == ["faehre.txt"]
    assert fresh_llm.requests == []  # no model translated it


async def test_a_language_it_cannot_translate_into_is_searched_as_written(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    built_in = _built_in_model(components)
    attach_components(app, built_in)
    headers = await auth_headers(client)
    await upload_and_process(client, built_in, headers, "traghetto.txt", ITALIAN.encode())
    response = await ask(client, headers, "When does the ferry to the island leave?")
    meta = response.json()["assistant_message"]["meta"]
    assert meta["languages_searched"] == ["en"]
    assert meta["searched_as_written"] == ["it"]


MILL_ENGLISH = "Johann Müller kept the mill at the river crossing for thirty years."
MILL_OTHER = "Peter Schmidt kept the bakery at the market square for thirty years."
MILL_GERMAN = "Die Mühle am Fluss wurde dreißig Jahre lang von Anna Müller geführt."


async def test_a_name_matches_with_or_without_its_umlaut_in_any_language(
    client: httpx.AsyncClient, components: Components, session: AsyncSession
) -> None:
    """The German stemmer folded umlauts and the English one did not: an English passage's
    "Müller" was `müller`, a question's "Muller" `muller`, and they never met."""
    headers = await auth_headers(client)
    english = await upload_and_process(
        client, components, headers, "mill.txt", MILL_ENGLISH.encode()
    )
    other = await upload_and_process(client, components, headers, "bakery.txt", MILL_OTHER.encode())
    german = await upload_and_process(
        client, components, headers, "muehle.txt", MILL_GERMAN.encode()
    )
    lexical = components.retriever.lexical
    assert lexical is not None
    for document in (english, german):
        scope = [vector_ref(document), vector_ref(other)]
        for question in ("Who is Muller?", "Who is Müller?", "Who is MÜLLER?"):
            found = await lexical.search(scope, question, 2)
            assert [str(hit.chunk.document_id) for hit in found][:1] == [document["id"]], (
                document["filename"],
                question,
            )
    codes = dict(
        (
            await session.execute(select(DocumentChunk.document_id, DocumentChunk.language_code))
        ).all()
    )
    assert codes[uuid.UUID(german["id"])] == "de"
    assert codes[uuid.UUID(english["id"])] == "en"


async def test_the_scope_s_languages_are_read_from_the_index(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    ferry = await upload_and_process(client, components, headers, "faehre.txt", FERRY.encode())
    italian = await upload_and_process(
        client, components, headers, "traghetto.txt", ITALIAN.encode()
    )
    lexical = components.retriever.lexical
    assert lexical is not None
    assert await lexical.languages_in([vector_ref(ferry)]) == {"de"}
    assert await lexical.languages_in([vector_ref(ferry), vector_ref(italian)]) == {"de", "it"}
    # A wide scope ("all I may read" over a large library) is a condition, not a list.
    rule = ScopeRule(uuid.UUID(ferry["owner_id"]), own=True)
    wide = DocumentScope(
        None,
        condition=ScopeCondition(IN_SCOPE, rule.parameters()),
        owners=[uuid.UUID(ferry["owner_id"])],
    )
    assert await lexical.languages_in(wide) == {"de", "it"}
