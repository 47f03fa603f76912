"""A message's query is embedded as the message arrives, while its turn is saved and its scope
read, and its search uses that embedding instead of computing one more."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.embedding import CountingEmbedder
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

pytestmark = pytest.mark.usefixtures("fresh_llm")

NOTES = "The Kestrel footbridge over the Amsel was designed by Ilse Varga and opened in 1907."


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never happened")


async def test_a_message_is_embedded_while_its_turn_is_saved(
    live_client: httpx.AsyncClient,
    live_components: Components,
    engine: AsyncEngine,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingEmbedder(live_components.retriever.embedder)
    monkeypatch.setattr(live_components.retriever, "embedder", counting)
    headers = await auth_headers(live_client)
    await upload_and_process(live_client, live_components, headers, "notes.md", NOTES.encode())
    fresh_llm.script("It opened in 1907 [1].")
    first = await ask(live_client, headers, "When did the Kestrel footbridge open?")
    chat_id = first.json()["chat_id"]
    assert counting.texts == [["When did the Kestrel footbridge open?"]]

    # Another connection holds the chat, so the follow-up's turn waits for it: its question
    # is embedded all the same, before the turn is saved.
    question = "Who designed the Kestrel footbridge?"
    fresh_llm.script("Ilse Varga designed it [1].")
    async with engine.connect() as holder:
        locked = "SELECT id FROM chats WHERE id = :id FOR UPDATE"
        await holder.execute(text(locked), {"id": chat_id})
        sent = asyncio.create_task(ask(live_client, headers, question, chat_id=chat_id))
        await _until(lambda: len(counting.texts) == 2)
        assert counting.texts[1] == [question] and not sent.done()
        await holder.rollback()
    answer = (await sent).json()["assistant_message"]
    assert answer["meta"]["grounded"] is True and "Ilse Varga" in fresh_llm.prompt_text()
    assert len(counting.texts) == 2  # the search used that embedding

    # A follow-up the model may reword is searched with the new words: nothing ahead.
    fresh_llm.script("Who designed the Kestrel footbridge over the Amsel?", "Ilse Varga [1].")
    body = {"chat_id": chat_id, "options": {"reformulate": True}}
    reworded = (await ask(live_client, headers, "And who was that?", **body)).json()
    assert reworded["assistant_message"]["meta"]["grounded"] is True
    assert counting.texts[2:] == [["Who designed the Kestrel footbridge over the Amsel?"]]


class CountingIndex:
    """The real vector index, counting its queries."""

    def __init__(self, index: Any) -> None:
        self.index, self.queries = index, 0

    async def query(self, *args: Any) -> Any:
        self.queries += 1
        return await self.index.query(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


async def test_a_message_is_searched_while_its_turn_is_saved(
    live_client: httpx.AsyncClient,
    live_components: Components,
    engine: AsyncEngine,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingIndex(live_components.retriever.index)
    monkeypatch.setattr(live_components.retriever, "index", counting)
    headers = await auth_headers(live_client)
    await upload_and_process(live_client, live_components, headers, "notes.md", NOTES.encode())
    question = "Who designed the Kestrel footbridge?"
    fresh_llm.script("Ilse Varga designed it [1].")
    # Another connection keeps messages from being written: the turn waits to save the
    # question, and its search has run all the same, once its chat and scope were read.
    async with engine.connect() as holder:
        await holder.execute(text("LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE"))
        sent = asyncio.create_task(ask(live_client, headers, question))
        await _until(lambda: counting.queries == 1)
        await asyncio.sleep(0.2)
        assert not sent.done()
        await holder.rollback()
    answer = (await sent).json()["assistant_message"]
    assert answer["meta"]["grounded"] is True and "Ilse Varga" in fresh_llm.prompt_text()
    assert counting.queries == 1  # the answer used that search

    # A question about nothing in the notes is still judged by the match floor.
    fresh_llm.script("I can tell you about the weather in general.")
    general = (await ask(live_client, headers, "What is the weather like on Neptune?")).json()
    assert general["assistant_message"]["meta"]["reason"] == "no_match"
    assert counting.queries == 2


async def test_a_search_ahead_reads_only_its_askers_documents(
    live_client: httpx.AsyncClient, live_components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Two users ask the same question at once, each over everything they may read: each
    search ahead runs over its asker's scope alone."""
    alice, bob = await auth_headers(live_client), await auth_headers(live_client)
    await upload_and_process(live_client, live_components, alice, "notes.md", NOTES.encode())
    other = b"The Kestrel cafe by the station opens at seven and closes at noon."
    await upload_and_process(live_client, live_components, bob, "cafe.md", other)
    question = "Who designed the Kestrel footbridge and when did it open?"
    fresh_llm.script("I do not know.", "I do not know.")
    answers = await asyncio.gather(
        ask(live_client, alice, question), ask(live_client, bob, question)
    )
    assert all(answer.status_code == 200 for answer in answers)
    prompts = [json.dumps(request) for request in fresh_llm.requests]
    assert sum("Ilse Varga" in prompt for prompt in prompts) == 1, "Alice's note reached Bob"
    bobs = answers[1].json()["assistant_message"]
    assert all(source["document_name"] == "cafe.md" for source in bobs["sources"] or [])
