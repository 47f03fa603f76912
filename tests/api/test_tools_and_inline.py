"""Tool-calling retrieval (`retrieval: tool`) and inline answers from unindexed documents."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.llm import prompts
from docchat.main.app import attach_components
from docchat.main.components import Components
from docchat.retrieval.tools import SEMANTIC_SEARCH_TOOL
from tests.support.chat import ask, ask_streaming
from tests.support.documents import upload, upload_and_process
from tests.support.files import make_pdf
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.users import auth_headers

BRIDGE = "The Zephyr suspension bridge was completed in 1932 by the engineer Marta Lindqvist."
VOLCANO = (
    "Mount Karsk is a dormant stratovolcano whose last eruption buried three villages in 1781."
)
TOOL = {"options": {"retrieval": "tool"}}
FIXTURES = Path(__file__).parents[1] / "fixtures" / "pdf"


# Every test here starts with a model that has no scripted replies and no requests.
pytestmark = pytest.mark.usefixtures("fresh_llm")


def search_call(arguments: dict[str, Any] | str, call_id: str = "call_1") -> Reply:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(
        tool_calls=[
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "semantic_search", "arguments": raw},
            }
        ]
    )


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_tool_schema_has_no_id_fields() -> None:
    properties = SEMANTIC_SEARCH_TOOL["function"]["parameters"]["properties"]
    assert set(properties) == {"query", "top_k"}
    assert not any(
        "id" in name
        for name in json.dumps(SEMANTIC_SEARCH_TOOL["function"]["parameters"]).split('"')
    )


async def test_tool_mode_searches_and_cites(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    fresh_llm.script(search_call({"query": "Zephyr bridge completion"}), "Completed in 1932 [1].")
    response = await ask(client, headers, "When was the Zephyr bridge completed?", **TOOL)
    answer = response.json()["assistant_message"]
    assert answer["content"] == "Completed in 1932 [1]."
    assert answer["sources"][0]["document_name"] == "bridge.md"
    assert answer["meta"]["retrieval"] == "tool" and answer["meta"]["tool_searches"] == 1

    first, second = fresh_llm.requests
    assert first["tools"] == [SEMANTIC_SEARCH_TOOL]
    assert first["messages"][0]["content"].startswith(prompts.TOOL_SYSTEM)
    [result] = tool_results(second)
    assert result.startswith("[1] ") and "Lindqvist" in result
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"


async def test_tool_call_cannot_widen_the_scope(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    alice = await auth_headers(client)
    bob = await auth_headers(client)
    secret = await upload_and_process(client, components, alice, "volcano.md", VOLCANO.encode())
    await upload_and_process(client, components, bob, "bridge.md", BRIDGE.encode())
    arguments = {
        "query": "Mount Karsk eruption villages",
        "document_ids": [secret["id"]],
        "file_ids": [secret["id"]],
    }
    fresh_llm.script(search_call(arguments), "No idea.")
    await ask(client, bob, "What happened at Mount Karsk?", **TOOL)
    for request in fresh_llm.requests:
        assert "stratovolcano" not in json.dumps(request)


async def test_tool_scope_includes_documents_attached_earlier_in_the_chat(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    bridge = await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    volcano = await upload_and_process(client, components, headers, "volcano.md", VOLCANO.encode())
    first = await ask(client, headers, "Read this", document_ids=[bridge["id"]])
    chat_id = first.json()["chat_id"]
    await ask(client, headers, "And this", chat_id=chat_id, document_ids=[volcano["id"]])
    fresh_llm.reset()
    fresh_llm.script(
        search_call({"query": "Zephyr bridge Karsk volcano", "top_k": 5}), "Both [1][2]."
    )
    body = (await ask(client, headers, "Compare both documents", chat_id=chat_id, **TOOL)).json()
    [result] = tool_results(fresh_llm.requests[1])
    assert "Lindqvist" in result and "stratovolcano" in result
    assert body["assistant_message"]["meta"]["documents_searched"] == 2
    assert {s["document_name"] for s in body["assistant_message"]["sources"]} == {
        "bridge.md",
        "volcano.md",
    }


async def test_malformed_tool_arguments_get_an_error_result(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    bad = Reply(
        tool_calls=[
            {
                "id": "a",
                "type": "function",
                "function": {"name": "semantic_search", "arguments": "{not json"},
            },
            {
                "id": "b",
                "type": "function",
                "function": {"name": "semantic_search", "arguments": '{"top_k": 3}'},
            },
            {
                "id": "c",
                "type": "function",
                "function": {"name": "delete_everything", "arguments": "{}"},
            },
        ]
    )
    fresh_llm.script(bad, "Sorry, I could not search.")
    response = await ask(client, headers, "Zephyr?", **TOOL)
    assert response.status_code == 200
    results = [json.loads(r)["error"] for r in tool_results(fresh_llm.requests[1])]
    assert results == [
        "The arguments are not valid JSON",
        "`query` must be a non-empty string",
        "Unknown tool 'delete_everything'; the only tool is semantic_search",
    ]
    assert response.json()["assistant_message"]["sources"] is None


async def test_tool_rounds_are_bounded(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    fresh_llm.script(
        *(search_call({"query": f"Zephyr {i}"}, f"c{i}") for i in range(5)), "Final [1]."
    )
    response = await ask(client, headers, "Zephyr bridge?", **TOOL)
    assert response.status_code == 200
    # Three rounds with the tool offered, then one answer without it.
    assert [("tools" in r) for r in fresh_llm.requests] == [True, True, True, False]
    assert response.json()["assistant_message"]["meta"]["tool_searches"] == 3


async def test_tool_mode_streams(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    fresh_llm.script(search_call({"query": "Zephyr"}), "In 1932 [1].")
    _, events = await ask_streaming(
        client, headers, "When was the Zephyr bridge completed?", **TOOL
    )
    names = [name for name, _ in events]
    assert names[0] == "meta" and names[1] == "sources" and names[-1] == "done"
    assert events[1][1]["sources"][0]["document_name"] == "bridge.md"
    assert events[-1][1]["assistant_message"]["content"] == "In 1932 [1]."


async def test_model_may_answer_without_searching(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "bridge.md", BRIDGE.encode())
    fresh_llm.script("Hello there!")
    answer = (await ask(client, headers, "Hi!", **TOOL)).json()["assistant_message"]
    assert answer["content"] == "Hello there!" and answer["sources"] is None
    assert answer["meta"]["tool_searches"] == 0


async def test_inline_answer_for_a_processing_pdf_with_pages(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    pdf = make_pdf(["Cover page of the survey.", VOLCANO])
    document = (await upload(client, headers, "survey.pdf", pdf)).json()
    assert document["status"] == "queued"
    fresh_llm.script("It erupted in 1781 [2].")
    answer = (
        await ask(client, headers, "When did Karsk erupt?", document_ids=[document["id"]])
    ).json()["assistant_message"]
    assert answer["content"] == "It erupted in 1781 [1]."
    [source] = answer["sources"]
    assert source["document_id"] == document["id"] and source["page"] == 2
    assert source["chunk_id"] == f"{document['id']}_1" and source["similarity"] is None
    assert answer["meta"]["inline_documents"] == 1

    # Once indexed, the same question uses retrieval instead.
    from docchat.ingestion.worker import IngestionWorker

    await IngestionWorker(components).run_until_idle()
    fresh_llm.script("1781 [1].")
    later = (
        await ask(client, headers, "When did Mount Karsk erupt?", document_ids=[document["id"]])
    ).json()
    meta = later["assistant_message"]["meta"]
    assert "inline_documents" not in meta and meta["retrieval_count"] >= 1
    assert later["assistant_message"]["sources"][0]["similarity"] is not None


async def test_inline_pdf_sent_as_a_file_part_when_the_endpoint_accepts_it(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM, app: Any
) -> None:
    llm_settings = components.settings.llm.model_copy(update={"pdf_input": True})
    settings = components.settings.model_copy(update={"llm": llm_settings})
    attach_components(app, dataclasses.replace(components, settings=settings))
    headers = await auth_headers(client)
    pdf = make_pdf([VOLCANO])
    document = (await upload(client, headers, "survey.pdf", pdf)).json()
    fresh_llm.script("It is a stratovolcano [1].")
    answer = (await ask(client, headers, "What is Karsk?", document_ids=[document["id"]])).json()[
        "assistant_message"
    ]
    content = fresh_llm.last_request["messages"][-1]["content"]
    assert content[0]["type"] == "file" and content[0]["file"]["filename"] == "survey.pdf"
    encoded = content[0]["file"]["file_data"].removeprefix("data:application/pdf;base64,")
    assert base64.b64decode(encoded) == pdf
    assert content[-1] == {"type": "text", "text": "What is Karsk?"}
    assert answer["sources"][0]["chunk_id"] == f"{document['id']}_file"


async def test_failed_documents_are_not_read_inline(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    encrypted = (FIXTURES / "libreoffice-writer-password.pdf").read_bytes()
    document = await upload_and_process(client, components, headers, "locked.pdf", encrypted)
    assert document["status"] == "failed"
    answer = (await ask(client, headers, "What is inside?", document_ids=[document["id"]])).json()
    assert answer["assistant_message"]["meta"]["reason"] == "no_documents"
    assert "inline_documents" not in answer["assistant_message"]["meta"]
