"""Answers that survive their reader (issue 40): written on the server until finished, Stop or
the time limit; readable while they are written; followed again from where a reader was.

Against uvicorn on loopback: a reader going away is the client closing the stream's
connection, which only a real server notices the way production does. (Two API processes:
tests/api/test_scale_out.py.)"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.config import Settings, WorkerSettings
from tests.support.live_server import LiveServer, serving
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.users import auth_headers

WORDS = [f"word{number}" for number in range(40)]
WHOLE = " ".join(WORDS)
SLOW_ANSWER = Reply(content=WHOLE, piece_delay_seconds=0.1)

pytestmark = pytest.mark.usefixtures("fresh_llm")

Events = list[tuple[str, dict[str, Any], str | None]]


def _quiet(settings: Settings, **changes: Any) -> Settings:
    worker = WorkerSettings(_env_file=None, enabled=False)  # type: ignore[call-arg]
    return settings.model_copy(update={"worker": worker, "answer_progress_seconds": 0.2, **changes})


@pytest.fixture(scope="module")
def server(settings: Settings) -> Iterator[LiveServer]:
    with serving(_quiet(settings)) as live:
        yield live


async def _read(response: httpx.Response, *, deltas: int | None = None) -> Events:
    """The stream's events (name, data, id), up to `deltas` deltas (None: to its end)."""
    events: Events = []
    name, ident = "", None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            ident = line.removeprefix("id: ")
        elif line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: ")), ident))
            ident = None
            if name in ("done", "error"):
                break
            if deltas is not None and sum(e[0] == "delta" for e in events) >= deltas:
                break
    return events


def _text(events: Events) -> str:
    return "".join(data["text"] for name, data, _ in events if name == "delta")


async def _ask_and_leave(
    client: httpx.AsyncClient, headers: dict[str, str], deltas: int, **body: Any
) -> tuple[dict[str, Any], str, str | None]:
    """Ask, read `deltas` pieces of the answer (0: only the receipt), go away: the meta
    event, the text read, the last event's id."""
    request = {"content": "Tell me a long story", **body}
    async with client.stream(
        "POST", "/api/v1/messages/stream", headers=headers, json=request
    ) as response:
        events = await _read(response, deltas=deltas or None) if deltas else []
        if not deltas:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    events.append(("meta", json.loads(line.removeprefix("data: ")), None))
                    break
    return events[0][1], _text(events), events[-1][2]


async def _follow(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    answer_id: str,
    *,
    last_event_id: str | None = None,
    offset: int | None = None,
) -> Events:
    sent = {**headers, "Last-Event-ID": last_event_id} if last_event_id else headers
    params = {"offset": offset} if offset is not None else None
    async with client.stream(
        "GET", f"/api/v1/messages/{answer_id}/stream", headers=sent, params=params
    ) as response:
        assert response.status_code == 200, await response.aread()
        return await _read(response)


async def _messages(
    client: httpx.AsyncClient, headers: dict[str, str], chat_id: str
) -> list[dict[str, Any]]:
    page = await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)
    items: list[dict[str, Any]] = page.json()["items"]
    return items


async def _settled(
    client: httpx.AsyncClient, headers: dict[str, str], chat_id: str
) -> list[dict[str, Any]]:
    """The chat's messages once no answer in it is being written."""
    for _ in range(150):
        items = await _messages(client, headers, chat_id)
        if all(item["status"] == "complete" for item in items):
            return items
        await asyncio.sleep(0.1)
    raise AssertionError(f"still streaming: {items}")


async def test_an_answer_goes_on_when_its_reader_leaves_and_can_be_read_meanwhile(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        meta, shown, _ = await _ask_and_leave(client, headers, deltas=3)
        assert shown.split() == WORDS[:3]
        chat_id, answer_id = meta["chat_id"], meta["assistant_message_id"]

        # While it is written, the chat lists it as streaming with its text so far.
        await asyncio.sleep(0.8)
        question, partial = await _messages(client, headers, chat_id)
        assert question["content"] == "Tell me a long story"
        assert partial["id"] == answer_id and partial["status"] == "streaming"
        assert partial["content"].split() == WORDS[: len(partial["content"].split())]
        assert len(partial["content"].split()) > 3

        _, answer = await _settled(client, headers, chat_id)
        assert answer["id"] == answer_id and answer["content"] == WHOLE
        assert answer["meta"].get("stopped") is None


async def test_a_reader_re_attaches_from_where_it_was(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        meta, shown, last_id = await _ask_and_leave(client, headers, deltas=4)
        assert last_id is not None and int(last_id) == len(shown)

        # EventSource's way: the last event's id in Last-Event-ID.
        answer_id = meta["assistant_message_id"]
        events = await _follow(client, headers, answer_id, last_event_id=last_id)
        names = [name for name, _, _ in events]
        assert names[0] == "meta" and names[-1] == "done"
        assert events[0][1]["user_message"]["id"] == meta["user_message"]["id"]
        assert shown + _text(events) == WHOLE
        assert events[-1][1]["assistant_message"]["content"] == WHOLE

        # Afterwards, from any offset: the answer as saved.
        again = await _follow(client, headers, answer_id, offset=5)
        assert [name for name, _, _ in again] == ["meta", "delta", "done"]
        assert _text(again) == WHOLE[5:]


async def test_two_readers_at_once_read_the_same_answer(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        meta, _, _ = await _ask_and_leave(client, headers, deltas=1)
        answer_id = meta["assistant_message_id"]
        first, second = await asyncio.gather(
            _follow(client, headers, answer_id), _follow(client, headers, answer_id)
        )
        assert _text(first) == _text(second) == WHOLE


async def test_a_question_asked_while_an_answer_is_written_does_not_see_it_as_history(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER, "Second answer.")
        meta, _, _ = await _ask_and_leave(client, headers, deltas=2)
        second = await client.post(
            "/api/v1/messages",
            headers=headers,
            json={"chat_id": meta["chat_id"], "content": "Another question", "rag_enabled": False},
        )
        assert second.status_code == 200, second.text
        sent = fresh_llm.requests[-1]["messages"]
        assert [m["role"] for m in sent if m["role"] != "system"] == ["user", "user"]
        assert all(m["content"] for m in sent)


async def test_stop_keeps_the_answer_as_far_as_it_went_and_counts_its_tokens(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        meta, _, _ = await _ask_and_leave(client, headers, deltas=3)
        answer_id = meta["assistant_message_id"]
        stopped = await client.post(f"/api/v1/messages/{answer_id}/stop", headers=headers)
        assert stopped.status_code == 204

        user, answer = await _settled(client, headers, meta["chat_id"])
        assert user["content"] == "Tell me a long story"
        assert answer["id"] == answer_id and answer["meta"]["stopped"] is True
        kept = answer["content"].split()
        assert kept[:3] == WORDS[:3] and len(kept) < len(WORDS) - 10
        usage = (await client.get("/api/v1/users/me/usage", headers=headers)).json()
        assert usage["tokens_today"] > 0
        # Stopping it again changes nothing; a stranger cannot stop or read it.
        again = await client.post(f"/api/v1/messages/{answer_id}/stop", headers=headers)
        assert again.status_code == 204
        other = await auth_headers(client)
        assert (
            await client.post(f"/api/v1/messages/{answer_id}/stop", headers=other)
        ).status_code == 404
        follow = await client.get(f"/api/v1/messages/{answer_id}/stream", headers=other)
        assert follow.status_code == 404

        # A finished answer carries no such mark.
        fresh_llm.script("A short and complete answer.")
        done = await client.post(
            "/api/v1/messages",
            headers=headers,
            json={"chat_id": meta["chat_id"], "content": "Short?"},
        )
        assert done.json()["assistant_message"]["meta"].get("stopped") is None


async def test_an_answer_stopped_before_its_first_word_leaves_only_the_question(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(Reply(content="Too late.", delay_seconds=1.5))
        meta, shown, _ = await _ask_and_leave(client, headers, deltas=0)
        assert shown == ""
        answer_id = meta["assistant_message_id"]
        following = asyncio.create_task(_follow(client, headers, answer_id))
        await asyncio.sleep(0.3)
        stopped = await client.post(f"/api/v1/messages/{answer_id}/stop", headers=headers)
        assert stopped.status_code == 204
        events = await following
        assert events[-1][0] == "error" and events[-1][1]["status"] == 410
        await asyncio.sleep(1.5)  # the model's reply has come and gone by now
        items = await _settled(client, headers, meta["chat_id"])
        assert [message["role"] for message in items] == ["user"]


@pytest.fixture(scope="module")
def hurried_server(settings: Settings) -> Iterator[LiveServer]:
    """A server whose answers may take one second."""
    with serving(_quiet(settings, answer_timeout_seconds=1.0)) as live:
        yield live


async def test_an_answer_over_its_time_limit_is_stopped_and_kept(
    hurried_server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=hurried_server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        meta, _, _ = await _ask_and_leave(client, headers, deltas=1)
        _, answer = await _settled(client, headers, meta["chat_id"])
        assert answer["meta"]["stopped"] is True
        assert 1 <= len(answer["content"].split()) < len(WORDS)


async def test_an_answer_whose_process_died_is_ended_as_interrupted(
    server: LiveServer, fresh_llm: ScriptedLLM, engine: AsyncEngine
) -> None:
    """A process killed mid-answer leaves a streaming row nobody updates: the next reader of
    the chat (or of the answer) ends it, kept as far as it got."""
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script("Once upon a time.")
        asked = await client.post("/api/v1/messages", headers=headers, json={"content": "A story?"})
        chat_id = asked.json()["chat_id"]
        abandoned, empty = uuid.uuid4(), uuid.uuid4()
        async with engine.begin() as connection:
            for answer_id, content in ((abandoned, "Half of a"), (empty, "")):
                await connection.execute(
                    text(
                        "INSERT INTO messages (id, chat_id, role, content, status, created_at, "
                        "updated_at) VALUES (:id, :chat, 'assistant', :content, 'streaming', "
                        "now() - interval '5 minutes', now() - interval '5 minutes')"
                    ),
                    {"id": answer_id, "chat": chat_id, "content": content},
                )
        events = await _follow(client, headers, str(abandoned))
        assert events[-1][0] == "done"
        ended = events[-1][1]["assistant_message"]
        assert ended["content"] == "Half of a" and ended["meta"]["interrupted"] is True
        items = await _messages(client, headers, chat_id)
        assert str(empty) not in [item["id"] for item in items]
        assert all(item["status"] == "complete" for item in items)


@pytest.fixture(scope="module")
def reading_server(settings: Settings) -> Iterator[LiveServer]:
    """A server whose worker reads uploads, for a stopped answer with documents in scope."""
    reading = settings.model_copy(
        update={"worker": settings.worker.model_copy(update={"enabled": True})}
    )
    with serving(reading) as live:
        yield live


async def test_a_stopped_answer_over_documents_is_kept_not_replaced_by_quotes(
    reading_server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=reading_server.url, timeout=30) as client:
        headers = await auth_headers(client)
        story = b"A long story: the harbour ferry sailed at dawn and the long story ends at dusk."
        uploaded = await client.post(
            "/api/v1/documents", headers=headers, files={"file": ("story.txt", story)}
        )
        assert uploaded.status_code == 202, uploaded.text
        document_id = uploaded.json()["id"]
        for _ in range(300):
            status = (await client.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
            if status["status"] == "completed":
                break
            await asyncio.sleep(0.1)
        assert status["status"] == "completed"

        fresh_llm.script(SLOW_ANSWER)
        meta, shown, _ = await _ask_and_leave(client, headers, deltas=3)
        assert shown.split() == WORDS[:3]
        answer_id = meta["assistant_message_id"]
        await client.post(f"/api/v1/messages/{answer_id}/stop", headers=headers)
        _, answer = await _settled(client, headers, meta["chat_id"])
        # Uncited, but stopped: the reader keeps what was written, not the documents' quotes.
        assert answer["meta"]["stopped"] is True
        assert answer["content"].split()[:3] == WORDS[:3]
        assert answer["sources"] is None and answer["meta"].get("answer_mode") != "extractive"
