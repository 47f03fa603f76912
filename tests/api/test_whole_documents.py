"""Summarise / compare requests read whole documents, map-reduce when they do not fit."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx

from docchat.llm import prompts
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

TOPICS = ["lighthouse", "ferry", "harbour", "glacier", "orchard", "quarry", "bridge", "mill"]


def sections(topics: list[str]) -> str:
    """One ~950-character paragraph per topic: a chunk each."""
    return "\n\n".join(
        (f"The {topic} section. " + f"This part of the report is about the {topic} alone. " * 20)[
            :950
        ]
        for topic in topics
    )


async def _report(
    client: httpx.AsyncClient, components: Components, topics: list[str]
) -> tuple[dict[str, str], dict[str, Any]]:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "report.md", sections(topics).encode()
    )
    assert document["chunk_count"] == len(topics)
    return headers, document


async def test_a_summary_reads_the_whole_document_when_it_fits(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers, document = await _report(client, components, TOPICS[:3])
    fresh_llm.script("It covers a lighthouse [1], a ferry [2] and a harbour [3].")
    response = await ask(client, headers, "Summarise this document", document_ids=[document["id"]])
    answer = response.json()["assistant_message"]
    assert answer["meta"]["retrieval_mode"] == "whole_documents"
    assert answer["meta"]["map_reduce_calls"] == 0
    assert len(fresh_llm.requests) == 1  # no search, no notes: one call with everything
    prompt = fresh_llm.prompt_text()
    assert all(f"The {topic} section." in prompt for topic in TOPICS[:3])
    # A Markdown file has no pages: its cited passages merge into one source.
    [source] = answer["sources"]
    assert source["document_name"] == "report.md" and source["page"] is None


async def test_a_document_larger_than_the_budget_is_condensed_first(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, app: Any
) -> None:
    headers, _ = await _report(client, components, TOPICS)
    # 1,400 characters: one part of 950 at a time, then the eight notes with their headers.
    search = components.settings.search.model_copy(update={"max_context_tokens": 350})
    settings = components.settings.model_copy(update={"search": search})
    attach_components(app, dataclasses.replace(components, settings=settings))
    fresh_llm.default.content = "Notes: the part is about one place."

    response = await ask(client, headers, "Give me an overview of the report")
    assert response.status_code == 200, response.text
    answer = response.json()["assistant_message"]
    calls = answer["meta"]["map_reduce_calls"]
    assert calls == len(TOPICS)  # one part per call at this budget, then it fits
    assert len(fresh_llm.requests) == calls + 1
    for index, topic in enumerate(TOPICS):
        notes_call = fresh_llm.requests[index]["messages"]
        assert notes_call[0]["content"].startswith(prompts.NOTES_SYSTEM)
        assert f"The {topic} section." in notes_call[1]["content"]
    final = fresh_llm.requests[-1]["messages"][0]["content"]
    assert final.startswith(prompts.GROUNDED_SYSTEM)
    assert final.count("Notes: the part is about one place.") == len(TOPICS)


async def test_an_ordinary_question_still_searches(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers, _ = await _report(client, components, TOPICS[:3])
    fresh_llm.script("About the ferry [1].")
    answer = (await ask(client, headers, "What is said about the ferry?")).json()
    assert answer["assistant_message"]["meta"]["retrieval_mode"] == "hybrid"


async def test_documents_too_long_to_condense_within_the_call_cap_are_searched(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, app: Any
) -> None:
    headers, document = await _report(client, components, TOPICS)
    search = components.settings.search.model_copy(update={"max_context_tokens": 300})
    answers = components.settings.answers.model_copy(
        update={"whole_document_max_calls": len(TOPICS) - 1}
    )
    settings = components.settings.model_copy(update={"search": search, "answers": answers})
    attach_components(app, dataclasses.replace(components, settings=settings))
    fresh_llm.script("The report covers several places [1].")

    response = await ask(client, headers, "Summarise this report", document_ids=[document["id"]])
    meta = response.json()["assistant_message"]["meta"]
    assert meta["retrieval_mode"] == "hybrid" and meta["whole_documents_skipped"] == "too_long"
    assert len(fresh_llm.requests) == 1  # not one notes call: the cap was known up front
