"""Research mode through the real stack: a question of several parts searched part by part,
each part quoted from its own passages (no model), or all the passages given to the model."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI

from docchat.answers import research
from docchat.main.components import Components
from docchat.retrieval.index import DocumentScope
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

# Two documents and a question with a part for each; the one best passage for the whole
# question is the handbook's, whose words it shares most.
HANDBOOK = (
    "# Bakery handbook\n\n"
    "Employees of the Larkspur bakery get 30 days of holiday a year, and the bakery closes for "
    "the first week of July. Holiday requests go to the head baker a month ahead."
)
OVENS = (
    "# Ovens\n\nThe deck ovens are serviced every March by Brennwerk, whose engineer also "
    "checks the steam injection of the rack oven."
)
QUESTION = (
    "How many days of holiday do Larkspur employees get, and when are the deck ovens serviced?"
)


async def _library(
    client: httpx.AsyncClient, components: Components, headers: dict[str, str]
) -> list[dict[str, Any]]:
    texts = {"handbook.md": HANDBOOK, "ovens.md": OVENS}
    return [
        await upload_and_process(client, components, headers, name, text.encode())
        for name, text in texts.items()
    ]


async def _answer(
    client: httpx.AsyncClient, headers: dict[str, str], **options: Any
) -> dict[str, Any]:
    response = await ask(client, headers, QUESTION, options={"top_k": 1, **options})
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()["assistant_message"]
    return message


async def _brief_over_handbook(
    client: httpx.AsyncClient, components: Components, question: str
) -> dict[str, Any]:
    """The research answer, with no model, of a new user who uploaded the handbook."""
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "handbook.md", HANDBOOK.encode())
    options = {"answer_mode": "extractive", "research": True}
    response = await ask(client, headers, question, options=options)
    message: dict[str, Any] = response.json()["assistant_message"]
    return message


async def test_each_part_of_a_question_is_searched_and_quoted_from_its_own_passages(
    client: httpx.AsyncClient, components: Components
) -> None:
    headers = await auth_headers(client)
    await _library(client, components, headers)
    single = await _answer(client, headers, answer_mode="extractive")
    # One search reads the passage its words lean to: the holiday's.
    assert [source["document_name"] for source in single["sources"]] == ["handbook.md"]
    assert "research" not in single["meta"]

    message = await _answer(client, headers, answer_mode="extractive", research=True)
    content = message["content"]
    assert content.startswith(research.BRIEF_INTRODUCTION.split("{")[0])
    assert "**How many days of holiday do Larkspur employees get?**" in content
    assert "**When are the deck ovens serviced?**" in content
    assert "30 days of holiday" in content and "every March by Brennwerk" in content
    assert {source["document_name"] for source in message["sources"]} >= {
        "handbook.md",
        "ovens.md",
    }
    meta = message["meta"]
    assert meta["evidence"] == "answered"
    searches = meta["research"]
    assert [(search["part"], search["document"]) for search in searches] == [
        (None, None),
        ("How many days of holiday do Larkspur employees get", None),
        ("when are the deck ovens serviced", None),
        # The document of the whole question's best passage, searched alone.
        (None, "handbook.md"),
    ]
    assert searches[0]["query"] == searches[3]["query"] == QUESTION
    # The whole question is searched deeper than each part.
    assert searches[0]["passages"] == research.WHOLE_DEPTH
    assert searches[2]["passages"] == 2  # the ovens' passage and the handbook's


async def test_a_part_the_documents_do_not_answer_makes_the_answer_partial(
    client: httpx.AsyncClient, components: Components
) -> None:
    message = await _brief_over_handbook(
        client,
        components,
        "How many days of holiday do Larkspur employees get, and who audits the Zephyrine "
        "accounts?",
    )
    assert "30 days of holiday" in message["content"]
    assert research.PART_NOT_ANSWERED in message["content"]
    assert message["meta"]["evidence"] == "partial"
    assert "Zephyrine" in message["meta"]["evidence_note"]


async def test_research_reads_no_document_outside_the_asker_s_scope(
    client: httpx.AsyncClient, components: Components
) -> None:
    owner = await auth_headers(client)
    await upload_and_process(client, components, owner, "ovens.md", OVENS.encode())
    asker = await auth_headers(client)
    await upload_and_process(client, components, asker, "handbook.md", HANDBOOK.encode())
    message = await _answer(client, asker, answer_mode="extractive", research=True)
    assert "Brennwerk" not in message["content"]
    assert {source["document_name"] for source in message["sources"]} == {"handbook.md"}
    assert {search["document"] for search in message["meta"]["research"]} <= {
        None,
        "handbook.md",
    }
    assert all(search["passages"] == 1 for search in message["meta"]["research"])


async def test_the_model_is_given_the_passages_of_every_part(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await _library(client, components, headers)
    fresh_llm.script(
        "Employees get 30 days of holiday [1]; the deck ovens are serviced every March [2]."
    )
    message = await _answer(client, headers, answer_mode="generative", research=True)
    prompt = str(fresh_llm.requests[-1]["messages"])
    assert "30 days of holiday" in prompt and "every March by Brennwerk" in prompt
    assert {source["document_name"] for source in message["sources"]} == {
        "handbook.md",
        "ovens.md",
    }
    assert len(message["meta"]["research"]) == 4


async def test_a_question_of_one_part_is_searched_whole_then_in_its_best_document(
    client: httpx.AsyncClient, components: Components
) -> None:
    message = await _brief_over_handbook(
        client, components, "How many days of holiday do Larkspur employees get?"
    )
    assert "30 days of holiday" in message["content"]
    searches = message["meta"]["research"]
    assert [(search["part"], search["document"]) for search in searches] == [
        (None, None),
        (None, "handbook.md"),
    ]


# A handbook whose holiday rules sit in two sections far apart, and a leaflet whose words are
# nearer the question's than the handbook's second section.
LONG_HANDBOOK = "\n\n".join(
    [
        "# Larkspur bakery handbook",
        "## Holidays\n\nLarkspur bakers get 30 days of holiday a year.",
        *(
            f"## Ovens {number}\n\n" + "The deck ovens are brushed, wiped and checked. " * 18
            for number in range(4)
        ),
        "## Requests\n\nHoliday is asked for at the counter by the first of the month before.",
    ]
)
LEAFLET = (
    "Holiday rules for bakers: the holiday rules of bakers, and the rules of a bakers' holiday."
)


async def test_research_reads_further_in_the_document_that_answers_first(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """A one-part question whose answer sits in two sections of one document: one search
    ranks another document's near match above the second section; research reads the first
    document further and finds it."""
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "handbook.md", LONG_HANDBOOK.encode())
    await upload_and_process(client, components, headers, "leaflet.md", LEAFLET.encode())
    question = "What are the holiday rules for Larkspur bakers?"
    options = {"answer_mode": "generative", "top_k": 1}
    prompts = []
    for research_mode in (False, True):
        fresh_llm.script("Bakers get 30 days of holiday [1].")
        await ask(client, headers, question, options={**options, "research": research_mode})
        prompts.append(str(fresh_llm.requests[-1]["messages"]))
    plain, researched = prompts
    assert "first of the month" not in plain
    # The whole question's deeper search reads the leaflet before the second section; the
    # handbook searched alone then finds that section.
    assert "Holiday rules for bakers" in researched
    assert "first of the month" in researched


async def test_openai_clients_ask_for_research_with_index_name(
    app: FastAPI,
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headers = await auth_headers(client)
    await _library(client, components, headers)
    searched: list[list[str]] = []
    search_parts = research.search_parts

    async def watched(*arguments: Any) -> list[research.Found]:
        searched.append([part.text for part in arguments[1]])
        return await search_parts(*arguments)

    monkeypatch.setattr(research, "search_parts", watched)
    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    fresh_llm.script("30 days [1]; every March [2].")
    messages: Any = [{"role": "user", "content": QUESTION}]
    completion = await sdk.chat.completions.create(
        model="scripted-model",
        messages=messages,
        extra_body={"index_name": "all", "research": True},
    )
    assert completion.choices[0].message.content == "30 days [1]; every March [2]."
    assert searched == [
        ["How many days of holiday do Larkspur employees get", "when are the deck ovens serviced"]
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.chat.completions.create(
            model="scripted-model", messages=messages, extra_body={"research": True}
        )
    assert "send index_name with it" in str(refused.value)
    await sdk.close()


async def test_the_search_started_ahead_is_the_one_research_mode_makes(
    live_client: httpx.AsyncClient,
    live_components: Components,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chat route starts the whole question's search while it saves the turn; research
    mode searched it deeper than that search, so it was made twice."""
    headers = await auth_headers(live_client)
    await _library(live_client, live_components, headers)
    everywhere: list[str] = []
    in_one_document: list[str] = []
    retriever = type(live_components.engine.retriever)
    search = retriever._search

    async def counted(self: Any, query: str, scope: DocumentScope, *arguments: Any) -> Any:
        alone = scope.refs is not None and len(scope.refs) == 1
        (in_one_document if alone else everywhere).append(query)
        return await search(self, query, scope, *arguments)

    monkeypatch.setattr(retriever, "_search", counted)
    await _answer(live_client, headers, answer_mode="extractive", research=True)
    assert everywhere.count(QUESTION) == 1
    assert len(everywhere) == 3  # the whole question, then each of its two parts
    # Each part, then the whole question, in the document of the best passage.
    assert len(in_one_document) == 3 and in_one_document[-1] == QUESTION
