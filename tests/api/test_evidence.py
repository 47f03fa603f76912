"""What the documents support, through the real stack with the scripted model: the model's
verdict line read and never shown, citations of passages that do not bear out their sentence
taken out, answers the documents do not give said so first with the nearest passages, and
sources that disagree shown on both sides."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from docchat.answers import engine, extractive
from docchat.llm import prompts
from docchat.main.components import Components
from tests.support.chat import ask, ask_streaming
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

HANDBOOK = (
    "# Bakery handbook\n\n"
    "Employees of the Larkspur bakery get 30 days of holiday a year, and the bakery closes for "
    "the first week of July. Sourdough loaves proof for 14 hours in the cold room."
)
# About the same employees (so that the search finds it beside the handbook), not their holiday.
PARKING = (
    "# Parking\n\nLarkspur employees get long-stay parking behind the fish market, which "
    "costs 6 euros a day."
)
REPORT_2023 = (
    "# Annual report 2023\n\nThe Larkspur bakery employed 12 bakers at the end of the year, "
    "in its two shops."
)
REPORT_2024 = (
    "# Annual report 2024\n\nThe Larkspur bakery employed 19 bakers at the end of the year, "
    "in its two shops."
)


async def _upload(
    client: httpx.AsyncClient, components: Components, headers: dict[str, str], name: str, text: str
) -> dict[str, Any]:
    return await upload_and_process(client, components, headers, name, text.encode())


async def _ask_generative(
    client: httpx.AsyncClient, headers: dict[str, str], question: str, document: dict[str, Any]
) -> dict[str, Any]:
    """The saved answer to `question` over `document`, in `generative` mode."""
    response = await ask(
        client,
        headers,
        question,
        document_ids=[document["id"]],
        options={"answer_mode": "generative"},
    )
    message: dict[str, Any] = response.json()["assistant_message"]
    return message


async def test_the_models_verdict_line_is_read_and_never_shown(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _upload(client, components, headers, "handbook.md", HANDBOOK)
    fresh_llm.script("Employees get 30 days of holiday a year [1].\nEvidence: partial")

    response, events = await ask_streaming(client, headers, "How many days of holiday are there?")
    assert response.status_code == 200
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    saved = events[-1][1]["assistant_message"]
    assert streamed == saved["content"] == "Employees get 30 days of holiday a year [1]."
    meta = saved["meta"]
    assert meta["grounded"] is True and meta["evidence"] == "partial" and meta["evidence_note"]
    assert prompts.GROUNDED_SYSTEM in fresh_llm.last_request["messages"][0]["content"]


async def test_a_trailer_that_cannot_be_read_never_takes_the_answer_with_it(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _upload(client, components, headers, "handbook.md", HANDBOOK)
    answer = "Sourdough loaves proof for 14 hours [1].\nEvidence: probably"
    fresh_llm.script(answer)

    saved = (await ask(client, headers, "How long do sourdough loaves proof?")).json()
    message = saved["assistant_message"]
    assert message["content"] == answer
    assert message["meta"]["evidence"] == "answered" and message["meta"]["grounded"] is True


async def test_the_documents_not_answering_is_said_first_with_the_nearest_passages(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    fresh_llm.script("Bread was first baked in ancient Egypt [1].\nEvidence: none")

    message = (
        await ask(client, headers, "Where was bread first baked?", document_ids=[handbook["id"]])
    ).json()["assistant_message"]
    assert message["content"] == (
        f"{prompts.NOT_IN_DOCUMENTS_LEAD}\n\nBread was first baked in ancient Egypt."
    )
    meta = message["meta"]
    assert meta["evidence"] == "not_in_documents" and meta["grounded"] is False
    assert message["sources"] and len(message["sources"]) <= 2  # the nearest, not an answer


async def test_an_answer_that_opens_saying_the_documents_do_not_answer_is_that_verdict(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Qwen2.5-1.5B wrote "The documents do not answer this question." with no verdict line
    (bench/eval_evidence.py): it was saved as a general answer with no verdict at all."""
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    fresh_llm.script("The documents do not answer this question.")

    message = (
        await ask(
            client,
            headers,
            "Where was bread first baked?",
            document_ids=[handbook["id"]],
            options={"answer_mode": "generative"},
        )
    ).json()["assistant_message"]
    assert message["content"] == "The documents do not answer this question."
    meta = message["meta"]
    assert meta["evidence"] == "not_in_documents" and meta["grounded"] is False
    assert meta["reason"] == "insufficient_information"


async def test_a_model_s_no_that_the_engine_s_quotes_contradict_is_a_partial_answer_in_auto(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Qwen2.5-1.5B opened "The documents do not answer this question." over passages giving
    the figure asked for. Asked again with the engine's quotes, it says so again: in `auto`
    the engine's quotes stand, as a partial answer; in `generative` the model's word stands."""
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    question = "How many days of holiday do employees of the Larkspur bakery get?"
    refusal = "The documents do not answer this question."
    fresh_llm.script(refusal, refusal)
    auto = (await ask(client, headers, question, document_ids=[handbook["id"]])).json()
    message = auto["assistant_message"]
    assert message["content"].startswith(
        extractive.PARTIAL_INTRODUCTION.format(why=engine.MODEL_FOUND_NONE)
    )
    assert "30 days of holiday" in message["content"] and message["sources"]
    meta = message["meta"]
    assert meta["evidence"] == "partial" and meta["evidence_note"] == engine.MODEL_FOUND_NONE
    assert meta["answer_mode"] == "extractive" and meta["extractive_reason"] == "uncited"

    fresh_llm.script(refusal, refusal)
    generative = await _ask_generative(client, headers, question, handbook)
    assert generative["meta"]["evidence"] == "not_in_documents"
    assert generative["content"] == "The documents do not answer this question."


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_model_that_finds_no_answer_is_asked_again_with_the_engine_s_quotes(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, streaming: bool
) -> None:
    """Qwen2.5-1.5B said "The documents do not answer this question." of 3 of 15 questions its
    passages answered (bench.eval_evidence). When the engine's own check quotes a sentence that
    gives the figure or date asked for, the model is asked once more with that sentence before
    its first answer is shown; its second answer is the one saved."""
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    question = "How many days of holiday do employees of the Larkspur bakery get?"
    fresh_llm.script(
        "The documents do not answer this question.\nEvidence: none",
        "Employees of the Larkspur bakery get 30 days of holiday a year [1].\nEvidence: answered",
    )
    body = {"document_ids": [handbook["id"]], "options": {"answer_mode": "generative"}}
    if streaming:
        response, events = await ask_streaming(client, headers, question, **body)
        assert response.status_code == 200
        streamed = "".join(data["text"] for kind, data in events if kind == "delta")
        assert "do not answer" not in streamed  # the first answer never reached the reader
        message = events[-1][1]["assistant_message"]
        assert streamed == message["content"]
    else:
        message = (await ask(client, headers, question, **body)).json()["assistant_message"]
    assert (
        message["content"] == "Employees of the Larkspur bakery get 30 days of holiday a year [1]."
    )
    meta = message["meta"]
    assert meta["evidence"] == "answered" and meta["grounded"] is True
    assert meta["answer_mode"] == "generative" and meta["answer_retried"] is True
    assert [source["document_name"] for source in message["sources"]] == ["handbook.md"]
    asked_again = fresh_llm.requests[-1]["messages"][-1]["content"]
    assert "30 days of holiday a year" in asked_again and question in asked_again
    # Offered "or say that the documents do not answer", Qwen2.5-1.5B took it again (2 of 2).
    assert "do not answer" not in asked_again


async def test_a_model_is_not_asked_again_when_the_engine_finds_no_figure_either(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """The engine's quotes of the passages do not give what is asked for (no number of ovens),
    or the question asks for no figure or date: one answer."""
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    for question in (
        "How many ovens does the Larkspur bakery have?",
        "What colour are the Larkspur bakery's ovens?",
    ):
        fresh_llm.script("The documents do not answer this question.\nEvidence: none")
        before = len(fresh_llm.requests)
        message = await _ask_generative(client, headers, question, handbook)
        assert message["meta"]["evidence"] == "not_in_documents", question
        assert len(fresh_llm.requests) == before + 1, question


async def test_documents_only_mode_gives_no_general_answer_when_they_do_not_answer(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    fresh_llm.script("The documents do not say. Bread began in Egypt.\nEvidence: none")

    message = (
        await ask(
            client,
            headers,
            "Where was bread first baked?",
            document_ids=[handbook["id"]],
            options={"strict": True},
        )
    ).json()["assistant_message"]
    assert message["content"] == prompts.NOT_FOUND_ANSWER
    assert message["meta"]["evidence"] == "not_in_documents"
    system = fresh_llm.last_request["messages"][0]["content"]
    assert "general knowledge without brackets" not in system


async def test_an_answer_about_a_year_the_documents_never_mention_is_not_grounded(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Seen with a real model: passages of the right topic and the wrong year were cited as
    the answer."""
    headers = await auth_headers(client)
    await _upload(client, components, headers, "handbook.md", HANDBOOK)
    question = "How many days of holiday did Larkspur employees get in 2019?"
    # Its passage bears out the sentence, not the year asked about.
    fresh_llm.script("Larkspur employees get 30 days of holiday a year [1].\nEvidence: answered")

    message = (await ask(client, headers, question)).json()["assistant_message"]
    meta = message["meta"]
    assert meta["evidence"] == "not_in_documents" and meta["grounded"] is False
    assert "2019" in meta["evidence_note"]
    assert message["content"].startswith("Your documents do not answer this (")
    assert prompts.OVERRULED_ANSWER_LEAD in message["content"] and "[1]" not in message["content"]

    # A sentence giving the year its passage does not give loses its marker: auto mode then
    # quotes the closest passage, saying it does not answer.
    fresh_llm.script("In 2019 employees got 30 days of holiday [1].\nEvidence: answered")
    message = (await ask(client, headers, question)).json()["assistant_message"]
    assert message["meta"]["evidence"] == "not_in_documents"
    assert message["meta"]["grounded"] is False
    assert message["content"].startswith(
        extractive.NOT_COVERED_INTRODUCTION.format(why="none of the passages mentions 2019")
    )


async def test_a_citation_of_a_passage_that_does_not_support_its_sentence_is_taken_out(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    handbook = await _upload(client, components, headers, "handbook.md", HANDBOOK)
    parking = await _upload(client, components, headers, "parking.md", PARKING)
    fresh_llm.script("Employees of the Larkspur bakery get 30 days of holiday a year [1][2].")

    message = (
        await ask(
            client,
            headers,
            "How many days of holiday do Larkspur employees get?",
            document_ids=[handbook["id"], parking["id"]],
        )
    ).json()["assistant_message"]
    assert message["meta"]["retrieval_count"] == 2, "both passages reach the model"
    assert message["meta"]["unsupported_citations"] == 1
    assert [source["document_name"] for source in message["sources"]] == ["handbook.md"]
    assert (
        message["content"] == "Employees of the Larkspur bakery get 30 days of holiday a year [1]."
    )


async def _reports(
    client: httpx.AsyncClient, components: Components, headers: dict[str, str]
) -> list[str]:
    first = await _upload(client, components, headers, "report-2023.md", REPORT_2023)
    second = await _upload(client, components, headers, "report-2024.md", REPORT_2024)
    return [first["id"], second["id"]]


def _sides(message: dict[str, Any]) -> dict[str, str]:
    """Each side's value by the name of the document it cites."""
    [conflict] = message["meta"]["conflicts"]
    sources = message["sources"]
    return {
        sources[side["source"] - 1]["document_name"]: side["value"] for side in conflict["sides"]
    }


async def test_a_written_answer_that_cites_one_side_is_told_the_sources_disagree(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    both = await _reports(client, components, headers)
    question = "How many bakers does the Larkspur bakery employ?"
    fresh_llm.script("The annual report gives the number of Larkspur bakers [1].")

    message = (await ask(client, headers, question, document_ids=both)).json()["assistant_message"]
    assert _sides(message) == {"report-2023.md": "12", "report-2024.md": "19"}
    assert "The sources disagree:" in message["content"]
    assert "gives 19" in message["content"] and "gives 12" in message["content"]
    assert {source["document_name"] for source in message["sources"]} == {
        "report-2023.md",
        "report-2024.md",
    }


async def test_an_extractive_answer_quotes_both_sides_of_a_disagreement(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    both = await _reports(client, components, headers)

    message = (
        await ask(
            client,
            headers,
            "How many bakers does the Larkspur bakery employ?",
            document_ids=both,
            options={"answer_mode": "extractive"},
        )
    ).json()["assistant_message"]
    assert message["content"].startswith(extractive.INTRODUCTION)
    assert "12 bakers" in message["content"] and "19 bakers" in message["content"]
    assert _sides(message) == {"report-2023.md": "12", "report-2024.md": "19"}
    assert message["meta"]["grounded"] is True and message["meta"]["evidence"] == "answered"


def _dated_report(year: int, bakers: int, day: str) -> str:
    return (
        f'<html><head><title>Annual report {year}</title><meta name="date" content="{day}">'
        f"</head><body><p>The Larkspur bakery employed {bakers} bakers at the end of the "
        "year, in its two shops.</p></body></html>"
    )


async def test_the_newer_of_two_disagreeing_sources_is_marked_by_its_own_date(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    # Uploaded newest first: the documents' own dates, not the upload order, tell which is newer.
    newer = await _upload(
        client, components, headers, "report-b.html", _dated_report(2024, 19, "2024-02-02")
    )
    older = await _upload(
        client, components, headers, "report-a.html", _dated_report(2023, 12, "2023-03-01")
    )

    message = (
        await ask(
            client,
            headers,
            "How many bakers does the Larkspur bakery employ?",
            document_ids=[older["id"], newer["id"]],
            options={"answer_mode": "extractive"},
        )
    ).json()["assistant_message"]
    [conflict] = message["meta"]["conflicts"]
    names = [source["document_name"] for source in message["sources"]]
    sides = {names[side["source"] - 1]: side for side in conflict["sides"]}
    assert sides["report-b.html"]["date"] == "2024-02-02" and sides["report-b.html"]["newest"]
    assert sides["report-a.html"]["date"] == "2023-03-01" and not sides["report-a.html"]["newest"]
    assert "(2024-02-02, the newest) gives 19 [" in message["content"]
