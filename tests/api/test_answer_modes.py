"""Answer modes: extractive (quotes, no model call), generative, and auto, which quotes with the
built-in demo model and when a grounded answer cites nothing; every source has a highlight."""

from __future__ import annotations

import dataclasses
import io
import re
from typing import Any

import httpx
import pptx
import pytest
from fastapi import FastAPI
from pptx.util import Inches

from docchat.answers import extractive
from docchat.llm import prompts
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.support.chat import ask, ask_streaming
from tests.support.documents import upload, upload_and_process
from tests.support.files import filler
from tests.support.llm_server import ScriptedLLM
from tests.support.office_files import make_docx
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

HANDBOOK = (
    "# Bakery handbook\n\n"
    "## Opening hours\n\n"
    "The bakery opens at six in the morning and closes at two. On Sundays it stays closed "
    "so that the ovens can be cleaned.\n\n"
    "## Bread\n\n"
    "Every loaf starts from the same starter, fed twice a day. Sourdough loaves proof for "
    "14 hours in the cold room before they are baked at 250 degrees.\n\n"
    "## People\n\n"
    "New bakers work alongside a senior baker for their first month. Employees get 30 days "
    "of holiday a year, and the bakery closes for the first week of July."
)


async def _handbook(
    client: httpx.AsyncClient, components: Components, headers: dict[str, str]
) -> dict[str, Any]:
    return await upload_and_process(client, components, headers, "handbook.md", HANDBOOK.encode())


def _with_builtin_model(
    app: FastAPI, components: Components, *, match_floor: float | None = None
) -> None:
    llm = components.settings.llm.model_copy(update={"builtin": True})
    search = components.settings.search
    if match_floor is not None:
        search = search.model_copy(update={"match_floor": match_floor})
    settings = components.settings.model_copy(update={"llm": llm, "search": search})
    attach_components(app, dataclasses.replace(components, settings=settings))


async def _checked_highlight(
    client: httpx.AsyncClient, headers: dict[str, str], document_id: str, source: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """The source's highlight, checked to be exactly the text at its offsets in the passage the
    document's passages API shows for it; and that passage."""
    response = await client.get(f"/api/v1/documents/{document_id}/passages", headers=headers)
    assert response.status_code == 200, response.text
    index = int(source["chunk_id"].rsplit("_", 1)[1])
    passage = next(p["text"] for p in response.json()["items"] if p["chunk_index"] == index)
    highlight = source["highlight"]
    assert passage[highlight["start"] : highlight["end"]] == highlight["text"]
    return highlight, passage


async def test_an_extractive_answer_quotes_the_fact_with_its_source_and_calls_no_model(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await _handbook(client, components, headers)

    response = await ask(
        client,
        headers,
        "How many days of holiday do employees get?",
        options={"answer_mode": "extractive"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()["assistant_message"]
    assert "30 days of holiday" in answer["content"] and "[1]" in answer["content"]
    assert answer["meta"]["answer_mode"] == "extractive"
    assert answer["meta"]["extractive_reason"] == "requested"
    assert answer["meta"]["grounded"] is True
    [source] = answer["sources"]
    highlight, _ = await _checked_highlight(client, headers, document["id"], source)
    assert "30 days of holiday" in highlight["text"]
    assert fresh_llm.requests == []  # no model call at all


async def test_auto_quotes_with_the_builtin_model_and_still_makes_small_talk_with_it(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    _with_builtin_model(app, components)
    headers = await auth_headers(client)
    await _handbook(client, components, headers)

    response, events = await ask_streaming(client, headers, "How long do sourdough loaves proof?")
    assert response.status_code == 200
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "meta" and kinds[1] == "sources" and kinds[-1] == "done"
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    saved = events[-1][1]["assistant_message"]
    assert "14 hours" in streamed and saved["content"] == streamed
    assert saved["meta"]["answer_mode"] == "extractive"
    assert saved["meta"]["extractive_reason"] == "builtin_model"
    assert "14 hours" in saved["sources"][0]["highlight"]["text"]
    assert fresh_llm.requests == []

    fresh_llm.script("Hello! What would you like to know?")
    general = (await ask(client, headers, "Hello!")).json()
    answer = general["assistant_message"]
    assert answer["content"] == "Hello! What would you like to know?"
    assert answer["sources"] is None and "answer_mode" not in answer["meta"]
    assert len(fresh_llm.requests) == 1


async def test_the_builtin_model_never_states_general_facts_the_documents_do_not_hold(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen with the keyless default: "What is the capital of France?" over documents that do
    not say got the 135M model's "L'Alma" under a "General answer" badge."""
    _with_builtin_model(app, components)
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    fresh_llm.script(*["The capital of France is L'Alma."] * 3)
    question = "What is the capital of France?"

    answer = (await ask(client, headers, question)).json()["assistant_message"]
    assert "L'Alma" not in answer["content"] and fresh_llm.requests == []
    not_covered = prompts.BUILTIN_NOT_ANSWERED["no_match"]
    assert answer["content"] == not_covered
    assert answer["sources"] is None and answer["meta"]["grounded"] is False
    assert answer["meta"]["reason"] == "no_match"
    assert answer["meta"]["evidence"] == "not_in_documents"  # the web app's "Not in your documents"
    _, events = await ask_streaming(client, headers, question)
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    assert streamed == events[-1][1]["assistant_message"]["content"] == not_covered
    openai = await client.post(
        "/v1/chat/completions",
        headers=headers,
        json={
            "model": "scripted-model",
            "index_name": "all",
            "messages": [{"role": "user", "content": question}],
        },
    )
    assert openai.json()["choices"][0]["message"]["content"] == not_covered
    assert fresh_llm.requests == []


async def test_a_question_right_after_an_upload_is_told_the_document_is_still_being_read(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """A newcomer asked about the file they had just uploaded and got "There are no documents
    to search yet.", with the file in the list: it was still being read."""
    _with_builtin_model(app, components)
    headers = await auth_headers(client)
    queued = await upload(client, headers, "ferry.txt", b"The night ferry leaves at 22:40.")
    assert queued.status_code == 202 and queued.json()["status"] != "completed"

    answer = (await ask(client, headers, "When does the night ferry leave?")).json()
    message = answer["assistant_message"]
    assert message["meta"]["reason"] == "no_documents"
    assert message["content"] == prompts.BUILTIN_NOT_ANSWERED["no_documents"]
    assert "once it has been read" in message["content"]
    assert fresh_llm.requests == []


async def test_the_builtin_model_shows_the_nearest_passages_as_not_answering(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """A question whose best passage comes near the match floor without reaching it: the
    answer says the documents do not seem to cover it and quotes the nearest passages, with
    their sources, not grounded."""
    _with_builtin_model(app, components, match_floor=0.99)  # nothing reaches it
    headers = await auth_headers(client)
    await _handbook(client, components, headers)

    answer = (await ask(client, headers, "How long do sourdough loaves proof?")).json()
    message = answer["assistant_message"]
    assert "14 hours" in message["content"] and "[1]" in message["content"]
    assert message["content"].startswith(extractive.NEAREST_INTRODUCTION)
    assert message["meta"]["grounded"] is False and message["meta"]["reason"] == "no_match"
    assert message["meta"]["evidence"] == "not_in_documents"
    assert message["sources"] and "14 hours" in message["sources"][0]["highlight"]["text"]
    assert fresh_llm.requests == []


GLIMMERDAL = (
    "# Glimmerdal survey deck\n\n"
    "The Glimmerdal drones survey the glacier every spring. Each flight covers 40 square "
    "kilometres and lands at the Glimmerdal hut."
)
BORGUND = (
    "# Borgund fleet deck\n\n"
    "The Borgund drones are insured by Nordvakt Assurance against loss and collision. "
    "They fly from the Borgund quay."
)


async def test_a_quote_is_about_what_the_question_names(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen in a keyless installation: "Who insures the Glimmerdal drones?" was answered by
    quoting another deck's insurer."""
    headers = await auth_headers(client)
    glimmerdal = await upload_and_process(
        client, components, headers, "glimmerdal.md", GLIMMERDAL.encode()
    )
    borgund = await upload_and_process(client, components, headers, "borgund.md", BORGUND.encode())
    both = [glimmerdal["id"], borgund["id"]]
    extractive_mode = {"answer_mode": "extractive"}

    asked = await ask(
        client,
        headers,
        "Who insures the Glimmerdal drones?",
        document_ids=both,
        options=extractive_mode,
    )
    answer = asked.json()["assistant_message"]
    assert "Nordvakt" not in answer["content"]
    assert all(source["document_name"] == "glimmerdal.md" for source in answer["sources"] or [])

    asked = await ask(
        client,
        headers,
        "Who insures the Kvitfjell drones?",
        document_ids=both,
        options=extractive_mode,
    )
    answer = asked.json()["assistant_message"]
    assert answer["content"] == extractive.NOT_ANSWERED.format(names="“Kvitfjell”")
    assert answer["sources"] is None and answer["meta"]["grounded"] is False
    assert answer["meta"]["reason"] == "insufficient_information"
    assert answer["meta"]["evidence"] == "not_in_documents"
    # The same question about the deck that holds the answer quotes it.
    asked = await ask(
        client,
        headers,
        "Who insures the Borgund drones?",
        document_ids=both,
        options=extractive_mode,
    )
    assert "Nordvakt Assurance" in asked.json()["assistant_message"]["content"]
    assert fresh_llm.requests == []


async def test_an_answer_of_bare_markers_is_asked_for_again(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen with a real 1.5B model: half its grounded answers were only "[1]"."""
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    sentence = "Sourdough loaves proof for 14 hours in the cold room [1]."
    fresh_llm.script("[1]", sentence)

    response, events = await ask_streaming(client, headers, "How long do sourdough loaves proof?")
    assert response.status_code == 200
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    saved = events[-1][1]["assistant_message"]
    assert streamed == saved["content"] == sentence  # the bare "[1]" was never shown
    assert saved["meta"]["answer_retried"] is True and saved["meta"]["grounded"] is True
    assert saved["meta"]["answer_mode"] == "generative" and len(saved["sources"]) == 1
    first, retry = fresh_llm.requests
    assert retry["messages"][:-1] == first["messages"][:-1]
    assert retry["messages"][-1]["content"].endswith(prompts.BARE_RETRY_INSTRUCTION)


async def test_two_answers_of_bare_markers_give_the_extractive_answer(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    question = "How long do sourdough loaves proof?"
    fresh_llm.script("[1]", " [2]. ", "[1]", "[1][2]")

    answer = (await ask(client, headers, question)).json()["assistant_message"]
    _, events = await ask_streaming(client, headers, question)
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    saved = events[-1][1]["assistant_message"]
    for message in (answer, saved):
        assert message["content"].startswith(extractive.INTRODUCTION)
        assert "14 hours" in message["content"]
        meta = message["meta"]
        assert meta["answer_mode"] == "extractive" and meta["extractive_reason"] == "bare"
        assert meta["answer_retried"] is True and meta["grounded"] is True
        assert "14 hours" in message["sources"][0]["highlight"]["text"]
    assert streamed == saved["content"]
    assert len(fresh_llm.requests) == 4


async def test_the_model_reads_earlier_answers_without_their_quoting_and_markers(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen in a newcomer run: after a quoted answer, the built-in model wrote its general
    answers as "From the documents: > ..." too, quoting nothing; and an earlier answer's [1]
    numbered other passages than the next turn's."""
    _with_builtin_model(app, components)
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    quoted = (await ask(client, headers, "How long do sourdough loaves proof?")).json()
    assert quoted["assistant_message"]["content"].startswith("From the documents:")

    fresh_llm.script("You are welcome.")
    await ask(client, headers, "Thanks!", chat_id=quoted["chat_id"])
    earlier = [m["content"] for m in fresh_llm.last_request["messages"] if m["role"] == "assistant"]
    assert len(earlier) == 1 and "14 hours" in earlier[0]
    assert "From the documents" not in earlier[0]
    assert not re.search(r"\[\d+\]|^>", earlier[0], re.MULTILINE), earlier[0]


async def test_auto_quotes_the_documents_when_the_models_grounded_answer_cites_nothing(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    fresh_llm.script("Around twelve days, I believe.")  # no marker, shares nothing with a passage

    response = await ask(client, headers, "How many days of holiday do employees get?")
    answer = response.json()["assistant_message"]
    assert answer["meta"]["answer_mode"] == "extractive"
    assert answer["meta"]["extractive_reason"] == "uncited"
    assert answer["meta"]["grounded"] is True and "reason" not in answer["meta"]
    assert "30 days of holiday" in answer["content"] and "twelve" not in answer["content"]
    assert answer["sources"] and "30 days" in answer["sources"][0]["highlight"]["text"]


async def test_generative_mode_keeps_an_uncited_answer_without_sources(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    fresh_llm.script("Around twelve days, I believe.")

    response = await ask(
        client,
        headers,
        "How many days of holiday do employees get?",
        options={"answer_mode": "generative"},
    )
    answer = response.json()["assistant_message"]
    assert answer["content"] == "Around twelve days, I believe."
    assert answer["sources"] is None and answer["meta"]["reason"] == "not_cited"


async def test_a_cited_generative_answer_highlights_the_sentence_the_answer_used(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await _handbook(client, components, headers)
    fresh_llm.script("The bakery shuts on Sundays so the ovens can be cleaned [1].")

    response, events = await ask_streaming(client, headers, "When is the bakery closed?")
    assert response.status_code == 200
    saved = events[-1][1]["assistant_message"]
    assert saved["meta"]["answer_mode"] == "generative"
    [source] = saved["sources"]
    highlight, _ = await _checked_highlight(client, headers, document["id"], source)
    assert "ovens can be cleaned" in highlight["text"]
    # Before the answer, the stream's sources carried the question's own highlights.
    streamed_sources = next(data for kind, data in events if kind == "sources")["sources"]
    assert all(source["highlight"] for source in streamed_sources)


async def test_the_openai_compatible_endpoint_returns_highlights_and_extractive_answers(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    _with_builtin_model(app, components)
    headers = await auth_headers(client)
    await _handbook(client, components, headers)
    response = await client.post(
        "/v1/chat/completions",
        headers=headers,
        json={
            "model": "scripted-model",
            "index_name": "all",
            "messages": [{"role": "user", "content": "How long do sourdough loaves proof?"}],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    content = body["choices"][0]["message"]["content"]
    assert "14 hours" in content and re.search(r"\[1\]", content)
    assert "14 hours" in body["sources"][0]["highlight"]["text"]
    assert fresh_llm.requests == []


def _slides_with_notes() -> bytes:
    """A slide with a table, then speaker notes that hold the fact (notes come last)."""
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Quarterly figures"
    table = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for row, cells in enumerate([["Quarter", "Orders"], ["Q1", "410"], ["Q2", "388"]]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    notes = slide.notes_slide.notes_text_frame
    assert notes is not None
    notes.text = "Mention that the Tromso warehouse reopened on 3 March after the flood."
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


# (file name, content, question, what the highlight must hold)
FORMATS = [
    (
        "guide.docx",
        make_docx(
            [
                (1, "Installation", [filler("the installer", 8)]),
                (
                    2,
                    "Proxy",
                    [
                        filler("network setup", 6),
                        "The proxy port defaults to 3128 on every gateway.",
                    ],
                ),
            ]
        ),
        "Which port does the proxy default to?",
        "3128",
    ),
    ("deck.pptx", _slides_with_notes(), "When did the Tromso warehouse reopen?", "3 March"),
    (
        "page.html",
        b"<html><head><title>Harbour</title></head><body><h1>Harbour rules</h1>"
        + b"<p>"
        + filler("mooring", 6).encode()
        + b"</p><p>Anchoring inside the breakwater costs 45 crowns a night.</p></body></html>",
        "How much does anchoring inside the breakwater cost?",
        "45 crowns",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "question", "fact"), FORMATS, ids=[f[0] for f in FORMATS]
)
async def test_highlight_offsets_point_at_the_fact_in_each_format(
    client: httpx.AsyncClient,
    components: Components,
    name: str,
    content: bytes,
    question: str,
    fact: str,
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, name, content)
    response = await ask(client, headers, question, options={"answer_mode": "extractive"})
    answer = response.json()["assistant_message"]
    assert answer["sources"], answer
    source = answer["sources"][0]
    highlight, passage = await _checked_highlight(client, headers, document["id"], source)
    assert fact in highlight["text"] and fact in answer["content"]
    assert not passage.startswith(highlight["text"]) or len(passage) <= 200
