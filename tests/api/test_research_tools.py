"""Research mode with a model that calls tools (issue 70), through the real stack and the real
`openai` SDK path: the scripted model drives the tool calls (good plans, loops, malformed
calls, documents outside the scope, budgets), and every tool result is checked for what the
asker may not read. Filters on plain questions too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from docchat.answers.research_tools import FINISH, LIST, READ, RESEARCH_TOOLS, SEARCH
from docchat.config import Settings
from docchat.llm import prompts
from docchat.main.components import Components
from tests.support.chat import ask, ask_streaming, parse_sse
from tests.support.documents import upload_and_process
from tests.support.live_server import LiveServer, serving
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

CONTRACT_A = (
    "# Supply contract A\n\n## Delivery\n\nGoods are delivered to the Harwick depot.\n\n"
    "## Penalties\n\nA late delivery costs the supplier a penalty of 500 euros per day."
)
CONTRACT_B = "Service contract B. The penalty for late payment is 2 percent of the invoice a month."
MENU = "# Canteen menu\n\nOn Fridays the canteen serves fish soup and rye bread."
SECRET = "Merger memo: the Osprey acquisition penalty is 9 million crowns, strictly private."
QUESTION = "Which contracts mention a penalty clause, and what are the amounts?"
RESEARCH = {"research": True, "top_k": 2}


def call(name: str, arguments: dict[str, Any] | str, ident: str = "call_1") -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": raw}}


def calls(*made: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[{**c, "id": f"call_{n}"} for n, c in enumerate(made)])


def tool_results(llm: ScriptedLLM) -> list[str]:
    """Every tool result the model was sent, in the order of its requests."""
    results: dict[str, str] = {}
    for request in llm.requests:
        for message in request["messages"]:
            if message["role"] == "tool":
                results[f"{id(request)}{message['tool_call_id']}"] = message["content"]
    seen: list[str] = []
    for text in results.values():
        if text not in seen:
            seen.append(text)
    return seen


def last_results(llm: ScriptedLLM) -> list[str]:
    return [m["content"] for m in llm.last_request["messages"] if m["role"] == "tool"]


async def _library(client: httpx.AsyncClient, components: Components) -> dict[str, str]:
    """A user with two contracts and a menu, and another user with a private memo."""
    headers = await auth_headers(client)
    texts = {"contract-a.md": CONTRACT_A, "contract-b.txt": CONTRACT_B, "menu.md": MENU}
    for name, text in texts.items():
        await upload_and_process(client, components, headers, name, text.encode())
    other = await auth_headers(client)
    await upload_and_process(client, components, other, "osprey-memo.md", SECRET.encode())
    return headers


async def _asked(
    client: httpx.AsyncClient, headers: dict[str, str], **options: Any
) -> dict[str, Any]:
    response = await ask(client, headers, QUESTION, options={**RESEARCH, **options})
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()["assistant_message"]
    return message


def test_the_tools_name_no_document_id() -> None:
    schema = json.dumps([tool["function"]["parameters"] for tool in RESEARCH_TOOLS])
    assert "_id" not in schema and '"id"' not in schema
    assert [tool["function"]["name"] for tool in RESEARCH_TOOLS] == [SEARCH, LIST, READ, FINISH]


async def test_a_good_plan_lists_searches_with_filters_reads_and_finishes(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await _library(client, components)
    fresh_llm.script(
        calls(call(LIST, {"filters": {"name": "contract"}})),
        calls(call(SEARCH, {"query": "late payment penalty", "filters": {"kind": "text"}})),
        calls(call(READ, {"document": "D1", "section": "Penalties"})),
        calls(call(FINISH, {})),
        "Contract A charges the supplier a penalty of 500 euros per day for late delivery. "
        "Contract B charges a penalty of 2 percent of the invoice a month for late payment.\n"
        "Evidence: answered",
    )
    message = await _asked(client, headers)
    meta = message["meta"]
    steps = meta["research_steps"]
    actions = [step["action"] for step in steps]
    # The searches of the question and its parts come first, then the model's own steps.
    assert actions[-4:] == ["list", "search", "read", "finish"]
    assert set(actions[:-4]) == {"search"}
    assert [step["number"] for step in steps] == list(range(1, len(steps) + 1))
    assert meta["research_end"] == "finished"
    listed, searched, read = steps[-4], steps[-3], steps[-2]
    assert listed["said"] == "Listed documents named like 'contract': 2"
    assert searched["filters"] == "text file" and searched["said"].endswith(": 1 passage")
    assert [p["filename"] for p in searched["passages"]] == ["contract-b.txt"]
    assert read["document"] in {"contract-a.md", "contract-b.txt", "menu.md"}
    # Every tool call was offered the tools; the answer was asked for without them.
    assert all("tools" in request for request in fresh_llm.requests[:4])
    assert "tools" not in fresh_llm.last_request
    listing = tool_results(fresh_llm)[0]
    assert '"contract-a.md"' in listing and '"contract-b.txt"' in listing
    assert "menu.md" not in listing
    final = fresh_llm.prompt_text()
    assert "500 euros per day" in final and "2 percent of the invoice" in final
    assert message["sources"] and meta["grounded"]
    grouped = {d["filename"]: d["citations"] for d in meta["cited_documents"]}
    assert set(grouped) == {"contract-a.md", "contract-b.txt"}
    assert sorted(n for numbers in grouped.values() for n in numbers) == list(
        range(1, len(message["sources"]) + 1)
    )


async def test_repeated_malformed_and_out_of_scope_calls_are_refused_and_never_leak(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = components.engine
    monkeypatch.setattr(
        engine, "answers", engine.answers.model_copy(update={"research_max_steps": 10})
    )
    headers = await _library(client, components)
    fresh_llm.script(
        calls(
            call(SEARCH, {"query": "penalty"}),
            call(SEARCH, {"query": "penalty"}),
            call(READ, {"document": "D42"}),
            call(READ, {"document": "00000000-0000-0000-0000-000000000001"}),
            call(LIST, {"filters": {"kind": "exe"}}),
            call("delete_everything", {}),
            call(SEARCH, "{not json"),
            call(SEARCH, {"query": "acquisition penalty", "filters": {"name": "osprey"}}),
            call(LIST, {"filters": {"collection": "Osprey"}}),
        ),
        "Contract A sets a penalty of 500 euros per day.\nEvidence: partial",
    )
    message = await _asked(client, headers)
    results = last_results(fresh_llm)
    assert len(results) == 9  # every call has its result
    errors = [json.loads(r)["error"] if r.startswith("{") else None for r in results]
    assert errors[0] is None
    assert errors[1] is not None and "already made (step" in errors[1]
    assert errors[2] is not None and errors[2].startswith("Unknown document")
    assert errors[3] is not None and errors[3].startswith("Unknown document")
    assert errors[4] is not None and errors[4].startswith("Unknown kind 'exe'")
    assert errors[5] is not None and errors[5].startswith("Unknown tool 'delete_everything'")
    assert errors[6] == "The arguments are not valid JSON"
    assert results[7] == "No document matches these filters."
    assert results[8] == "No document matches these filters."
    for result in [*tool_results(fresh_llm), fresh_llm.prompt_text()]:
        assert "Osprey acquisition" not in result and "osprey-memo" not in result
    steps = message["meta"]["research_steps"]
    assert [s["action"] for s in steps[-9:]] == [
        "search", "refused", "refused", "refused", "refused", "refused", "refused",
        "search", "list",
    ]  # fmt: skip
    assert message["meta"]["research_end"] == "answered"
    assert all(s["document_name"] != "osprey-memo.md" for s in message["sources"] or [])


async def test_a_model_that_never_finishes_is_stopped_by_its_step_budget(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = components.engine
    monkeypatch.setattr(
        engine, "answers", engine.answers.model_copy(update={"research_max_steps": 2})
    )
    headers = await _library(client, components)
    fresh_llm.script(
        calls(
            call(SEARCH, {"query": "penalty one"}),
            call(SEARCH, {"query": "penalty two"}),
            call(SEARCH, {"query": "penalty three"}),
        ),
        "Contract A charges 500 euros per day.\nEvidence: partial",
    )
    message = await _asked(client, headers)
    meta = message["meta"]
    assert meta["research_end"] == "steps"
    own = [s for s in meta["research_steps"] if s.get("query", "").startswith("penalty ")]
    assert [s["query"] for s in own] == ["penalty one", "penalty two"]
    # One round of calls (its third not run), then the answer, told that the research
    # stopped short.
    assert len(fresh_llm.requests) == 2
    assert "tools" not in fresh_llm.last_request
    assert prompts.RESEARCH_BUDGET_SPENT in fresh_llm.prompt_text()


async def test_tool_calls_written_as_text_are_run_and_a_broken_one_is_not_the_answer(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    # Seen with Qwen2.5-1.5B on llama.cpp's Python server, which does not parse its calls:
    # each reply was the call as JSON in its text, and was shown as the answer.
    headers = await _library(client, components)
    written = '```json\n{"name": "search_documents", "arguments": {"query": "late payment"}}\n```'
    fresh_llm.script(
        written,
        '{"type": "function", "function": {"name": "finish", "arguments": {}}}',
        "Contract B charges 2 percent of the invoice a month [1].\nEvidence: answered",
    )
    message = await _asked(client, headers)
    meta = message["meta"]
    assert [s["action"] for s in meta["research_steps"]][-2:] == ["search", "finish"]
    assert meta["research_steps"][-2]["query"] == "late payment"
    assert meta["research_end"] == "finished"
    # Its results went back as plain messages, which any chat template takes.
    sent = fresh_llm.requests[1]["messages"]
    assert sent[-1]["role"] == "user" and sent[-1]["content"].startswith(
        "Result of search_documents:"
    )
    assert message["content"].startswith("Contract B charges 2 percent")

    # A call cut short cannot be run, and is not the answer either.
    fresh_llm.script(
        'I will search. <tool_call>{"name": "search_documents", "arguments": {"query": "pen',
        "Contract A charges 500 euros per day [1].\nEvidence: answered",
    )
    broken = await _asked(client, headers)
    assert broken["meta"]["research_end"] == "answered"
    assert broken["content"].startswith("Contract A charges 500 euros per day")
    assert "tools" not in fresh_llm.last_request


async def test_a_research_over_its_token_budget_is_answered_from_what_was_read(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = components.engine
    monkeypatch.setattr(
        engine, "answers", engine.answers.model_copy(update={"research_max_tokens": 1_000})
    )
    headers = await _library(client, components)
    long_thought = "Let me think about the contracts. " * 200  # ~1,700 tokens of reply
    fresh_llm.script(
        Reply(content=long_thought, tool_calls=[call(SEARCH, {"query": "penalty amounts"})]),
        "Contract A charges 500 euros per day.\nEvidence: partial",
    )
    message = await _asked(client, headers)
    assert message["meta"]["research_end"] == "tokens"
    assert len(fresh_llm.requests) == 2
    assert prompts.RESEARCH_BUDGET_SPENT in fresh_llm.prompt_text()


async def test_steps_stream_before_the_sources_and_are_kept_with_the_answer(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await _library(client, components)
    fresh_llm.script(
        calls(call(SEARCH, {"query": "late delivery penalty"})),
        calls(call(FINISH, {"not_covered": "penalties of the menu"})),
        "Contract A charges a penalty of 500 euros per day for a late delivery.\n"
        "Evidence: answered",
    )
    response, events = await ask_streaming(
        client, headers, QUESTION, options={**RESEARCH, "answer_mode": "generative"}
    )
    assert response.status_code == 200
    names = [name for name, _ in events]
    first_sources = names.index("sources")
    assert names[0] == "meta" and set(names[1:first_sources]) == {"step"}
    assert "step" not in names[first_sources:]
    streamed = [data for name, data in events if name == "step"]
    done = events[-1][1]["assistant_message"]
    assert done["meta"]["research_steps"] == streamed
    assert streamed[-1]["action"] == "finish"
    # What the model said it could not find is passed on to the answer.
    assert "The research found nothing about: penalties of the menu" in fresh_llm.prompt_text()
    # A reader who comes back reads the same answer, steps and all.
    again = await client.get(f"/api/v1/messages/{done['id']}/stream", headers=headers)
    replayed = parse_sse(again.text)
    assert replayed[-1][1]["assistant_message"]["meta"]["research_steps"] == streamed


async def test_openai_clients_receive_each_step_as_a_chunk(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await _library(client, components)
    fresh_llm.script(
        calls(call(SEARCH, {"query": "payment penalty", "filters": {"kind": "text"}})),
        calls(call(FINISH, {})),
        "Contract B charges 2 percent of the invoice a month.\nEvidence: partial",
    )
    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    stream = await sdk.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        extra_body={"index_name": "all", "research": True},
    )
    steps, text = [], ""
    async for chunk in stream:
        extra = chunk.model_extra or {}
        if "research_step" in extra:
            steps.append(extra["research_step"])
            assert not chunk.choices[0].delta.content
        elif chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    assert [s["action"] for s in steps][-2:] == ["search", "finish"]
    assert steps[-2]["filters"] == "text file"
    assert "2 percent" in text


async def test_plain_questions_take_filters(
    app: FastAPI, client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await _library(client, components)
    fresh_llm.script("The penalty is 2 percent of the invoice a month [1].\nEvidence: answered")
    response = await ask(
        client, headers, "What is the penalty amount?", options={"filters": {"kind": "text"}}
    )
    message = response.json()["assistant_message"]
    assert {s["document_name"] for s in message["sources"]} == {"contract-b.txt"}
    assert message["meta"]["filters"] == "text file"
    assert "500 euros" not in fresh_llm.prompt_text()

    nothing = await ask(
        client, headers, "What is the penalty amount?", options={"filters": {"date_to": "1999"}}
    )
    # Not "no documents yet", which sent a user to wait for an upload that was done.
    nothing_meta = nothing.json()["assistant_message"]["meta"]
    assert nothing_meta["reason"] == "no_filter_match"
    assert nothing_meta["documents_searched"] == 0

    for bad, said in [
        ({"kind": "exe"}, "Unknown kind 'exe'"),
        ({"date_from": "last week"}, "`date_from` must be a date"),
        ({"owner_id": "x"}, "Extra inputs are not permitted"),
    ]:
        refused = await ask(client, headers, "What is the penalty?", options={"filters": bad})
        assert refused.status_code == 422, refused.text
        assert said in refused.text

    fresh_llm.script("The penalty is 500 euros per day [1].\nEvidence: answered")
    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    completion = await sdk.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "What is the penalty amount?"}],
        extra_body={"index_name": "all", "filters": {"name": "contract-a"}},
    )
    sources = (completion.model_extra or {})["sources"]
    assert {s["document_name"] for s in sources} == {"contract-a.md"}


async def test_a_question_that_names_its_documents_searches_only_those(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await _library(client, components)
    budget = "Budget 2023. The penalty reserve is 40,000 euros for late deliveries."
    await upload_and_process(client, components, headers, "budget-2023.md", budget.encode())
    fresh_llm.script("It is 2 percent of the invoice a month [1].\nEvidence: answered")

    async def asked(question: str, **options: Any) -> dict[str, Any]:
        response = await ask(client, headers, question, options=options)
        assert response.status_code == 200, response.text
        message: dict[str, Any] = response.json()["assistant_message"]
        return message

    by_name = await asked("What penalty does contract-b.txt set?")
    assert {s["document_name"] for s in by_name["sources"]} == {"contract-b.txt"}
    assert by_name["meta"]["filters"] == "documents named in the question"
    assert by_name["meta"]["documents_searched"] == 1

    by_kind = await asked("In the Markdown files, what penalty does a late delivery cost?")
    assert by_kind["meta"]["documents_searched"] == 3  # contract-a, menu, budget-2023
    assert "500 euros" in fresh_llm.prompt_text() and "2 percent" not in fresh_llm.prompt_text()

    by_year = await asked("What penalty reserve does the 2023 budget hold?")
    assert by_year["meta"]["documents_searched"] == 1
    assert "40,000 euros" in fresh_llm.prompt_text()
    filtered = await asked("What is the penalty?", filters={"year": 2023})
    assert filtered["meta"]["filters"] == "of 2023" and filtered["meta"]["documents_searched"] == 1

    # Named but absent (no PDF here), or named nowhere: every document is searched.
    for question in ["What penalty do the PDFs mention?", "What is the penalty amount?"]:
        plain = await asked(question)
        assert plain["meta"].get("filters") is None
        assert plain["meta"]["documents_searched"] == 4


@pytest.fixture(scope="module")
def researching_server(settings: Settings) -> Iterator[LiveServer]:
    """A real server (a reader going away is its connection closing) whose worker reads
    uploads and which saves an answer's progress five times a second."""
    live = settings.model_copy(
        update={
            "worker": settings.worker.model_copy(update={"enabled": True}),
            "answer_progress_seconds": 0.2,
        }
    )
    with serving(live) as server:
        yield server


async def _uploaded(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    for name, text in {"contract-a.md": CONTRACT_A, "contract-b.txt": CONTRACT_B}.items():
        sent = await client.post(
            "/api/v1/documents", headers=headers, files={"file": (name, text.encode())}
        )
        assert sent.status_code == 202, sent.text
    for _ in range(300):
        listed = (await client.get("/api/v1/documents", headers=headers)).json()["items"]
        if all(item["status"] == "completed" for item in listed):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the uploads were not read")


async def _events(response: httpx.Response, *, until: str | None = None) -> list[Any]:
    events: list[Any] = []
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
            if name in ("done", "error", until):
                break
    return events


async def test_a_reader_who_leaves_mid_research_comes_back_to_every_step(
    researching_server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=researching_server.url, timeout=30) as client:
        headers = await auth_headers(client)
        await _uploaded(client, headers)
        fresh_llm.script(
            calls(call(SEARCH, {"query": "late delivery penalty"})),
            Reply(tool_calls=[call(READ, {"document": "D1"})], delay_seconds=1.5),
            Reply(tool_calls=[call(FINISH, {})], delay_seconds=0.5),
            "Contract A charges a penalty of 500 euros per day.\nEvidence: partial",
        )
        body = {"content": QUESTION, "options": RESEARCH}
        async with client.stream(
            "POST", "/api/v1/messages/stream", headers=headers, json=body
        ) as response:
            first = await _events(response, until="step")
        meta = first[0][1]
        answer_id, chat_id = meta["assistant_message_id"], meta["chat_id"]
        # Meanwhile the answer's row holds the steps so far: what a reader on another
        # process is told.
        await asyncio.sleep(0.6)
        listed = await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)
        writing = next(m for m in listed.json()["items"] if m["id"] == answer_id)
        assert writing["status"] == "streaming"
        assert writing["meta"]["research_steps"][-1]["query"] == "late delivery penalty"
        async with client.stream(
            "GET", f"/api/v1/messages/{answer_id}/stream", headers=headers
        ) as response:
            again = await _events(response)
        steps = [data for name, data in again if name == "step"]
        done = again[-1][1]["assistant_message"]
        assert [s["action"] for s in steps][-3:] == ["search", "read", "finish"]
        assert done["meta"]["research_steps"] == steps
        assert done["meta"]["research_end"] == "finished"
