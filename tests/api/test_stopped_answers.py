"""A reader who stops an answer keeps what they were shown (issue 19, bug 7).

Against uvicorn on loopback: stopping is the client closing the stream's connection, which
only a real server notices the way production does."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from docchat.config import Settings, WorkerSettings
from tests.support.live_server import LiveServer
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.users import auth_headers

WORDS = [f"word{number}" for number in range(40)]
SLOW_ANSWER = Reply(content=" ".join(WORDS), piece_delay_seconds=0.15)

pytestmark = pytest.mark.usefixtures("fresh_llm")


@pytest.fixture(scope="module")
def server(settings: Settings) -> Iterator[LiveServer]:
    quiet = settings.model_copy(
        update={"worker": WorkerSettings(_env_file=None, enabled=False)}  # type: ignore[call-arg]
    )
    live = LiveServer(quiet).start()
    yield live
    live.stop()


async def _stop_after(
    client: httpx.AsyncClient, headers: dict[str, str], deltas: int
) -> tuple[str, str]:
    """Ask, read `deltas` pieces of the answer (0: none, only the question's receipt), then
    go away: (chat id, the text shown)."""
    shown, chat_id, event = "", "", ""
    body = {"content": "Tell me a long story"}
    async with client.stream(
        "POST", "/api/v1/messages/stream", headers=headers, json=body
    ) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                if event == "meta":
                    chat_id = data["chat_id"]
                elif event == "delta":
                    shown += data["text"]
                    deltas -= 1
                if deltas <= 0:
                    break
    return chat_id, shown


async def _messages_once_settled(
    client: httpx.AsyncClient, headers: dict[str, str], chat_id: str, count: int
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for _ in range(100):
        page = await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)
        items = page.json()["items"]
        if len(items) >= count:
            break
        await asyncio.sleep(0.1)
    return items


async def test_a_stopped_answer_is_kept_as_far_as_it_went_and_marked_stopped(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(SLOW_ANSWER)
        chat_id, shown = await _stop_after(client, headers, deltas=3)
        assert shown.split() == WORDS[:3]

        user, answer = await _messages_once_settled(client, headers, chat_id, count=2)
        assert user["content"] == "Tell me a long story"
        assert answer["role"] == "assistant" and answer["meta"]["stopped"] is True
        # What the reader saw, perhaps a piece or two more that was on its way; never the rest.
        kept = answer["content"].split()
        assert kept[:3] == WORDS[:3] and len(kept) < len(WORDS) - 10
        # Its model use counts against the quota like any other answer's.
        usage = (await client.get("/api/v1/users/me/usage", headers=headers)).json()
        assert usage["tokens_today"] > 0

        # A finished answer carries no such mark.
        fresh_llm.script("A short and complete answer.")
        done = await client.post(
            "/api/v1/messages", headers=headers, json={"chat_id": chat_id, "content": "Short?"}
        )
        assert done.json()["assistant_message"]["meta"].get("stopped") is None


async def test_an_answer_stopped_before_its_first_word_saves_only_the_question(
    server: LiveServer, fresh_llm: ScriptedLLM
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        headers = await auth_headers(client)
        fresh_llm.script(Reply(content="Too late.", delay_seconds=1.5))
        chat_id, shown = await _stop_after(client, headers, deltas=0)
        assert shown == ""
        await asyncio.sleep(2.5)  # the model's reply has come and gone by now
        items = await _messages_once_settled(client, headers, chat_id, count=1)
        assert [message["role"] for message in items] == ["user"]


@pytest.fixture(scope="module")
def reading_server(settings: Settings) -> Iterator[LiveServer]:
    """A server whose worker reads uploads, for a stopped answer with documents in scope."""
    reading = settings.model_copy(
        update={"worker": settings.worker.model_copy(update={"enabled": True})}
    )
    live = LiveServer(reading).start()
    yield live
    live.stop()


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
        chat_id, shown = await _stop_after(client, headers, deltas=3)
        assert shown.split() == WORDS[:3]
        _, answer = await _messages_once_settled(client, headers, chat_id, count=2)
        # Uncited, but stopped: the reader keeps what they saw, not the documents' quotes.
        assert answer["meta"]["stopped"] is True
        assert answer["content"].split()[:3] == WORDS[:3]
        assert answer["sources"] is None and answer["meta"].get("answer_mode") != "extractive"
