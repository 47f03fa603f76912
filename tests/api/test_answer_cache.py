"""The answer cache (issue 42): off by default; on, a model's answer is reused only for the
same (or nearly the same) question with the same scope, passages, history, model and settings,
never from documents the asker cannot read now, and only for the person who asked it (issue
67)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from docchat.answers.cache import decisive_words, normalised
from docchat.db import create_engine
from docchat.ingestion.worker import IngestionWorker
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.database import alembic
from tests.support.documents import upload, upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

GUIDE = b"Gateway guide.\n\nThe gateway listens on port 8080 for the admin console."
QUESTION = "Which port does the gateway listen on for the admin console?"


@pytest.fixture
def cached(components: Components, app: FastAPI) -> Components:
    cache = components.settings.answer_cache.model_copy(update={"answer_cache": True})
    enabled = dataclasses.replace(
        components, settings=components.settings.model_copy(update={"answer_cache": cache})
    )
    attach_components(app, enabled)
    return enabled


def _answer(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()["assistant_message"]
    return answer


async def test_off_by_default_the_model_answers_every_time(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "gateway.txt", GUIDE)
    for _ in range(2):
        fresh_llm.script("Port 8080 [1].")
        assert "cached" not in _answer(await ask(client, headers, QUESTION))["meta"]
    assert len(fresh_llm.requests) == 2


async def test_the_same_question_is_answered_from_the_cache_with_its_own_sources(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, cached, headers, "gateway.txt", GUIDE)
    fresh_llm.script("The console is on port 8080 [1].")
    first = _answer(await ask(client, headers, QUESTION))
    assert first["meta"]["grounded"] and "cached" not in first["meta"]
    calls = len(fresh_llm.requests)

    # A new chat, the same question reworded trivially: no model call, the same answer and
    # its sources from this search; the tokens are not counted.
    again = _answer(
        await ask(client, headers, "which port does the gateway listen on for admin console")
    )
    assert len(fresh_llm.requests) == calls
    assert again["meta"]["cached"] is True and again["content"] == first["content"]
    assert [s["document_id"] for s in again["sources"]] == [document["id"]]
    assert again["prompt_tokens"] == 0 and again["completion_tokens"] == 0
    usage = (await client.get("/api/v1/users/me/usage", headers=headers)).json()
    assert usage["tokens_today"] == first["prompt_tokens"] + first["completion_tokens"]

    # A different question on the same passage is not the same question.
    fresh_llm.script("Nothing about that [1].")
    other = _answer(await ask(client, headers, "Which port does the gateway not listen on?"))
    assert "cached" not in other["meta"] and len(fresh_llm.requests) == calls + 1
    # Streaming gets the cached answer too.
    streamed = await client.post(
        "/api/v1/messages/stream", headers=headers, json={"content": QUESTION}
    )
    assert '"cached": true' in streamed.text or '"cached":true' in streamed.text
    assert "port 8080" in streamed.text and len(fresh_llm.requests) == calls + 1


async def test_a_new_version_a_deleted_document_another_model_or_history_miss(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, cached, headers, "gateway.txt", GUIDE)
    fresh_llm.script("Port 8080 [1].")
    _answer(await ask(client, headers, QUESTION))

    fresh_llm.script("Port 8080, says the other model [1].")
    other_model = _answer(await ask(client, headers, QUESTION, options={"model": "override"}))
    assert "cached" not in other_model["meta"]

    # The same question later in a conversation: its history differs.
    fresh_llm.script("Hello.", "Port 8080 again [1].")
    chat_id = (await ask(client, headers, "Hello there")).json()["chat_id"]
    in_chat = _answer(await ask(client, headers, QUESTION, chat_id=chat_id))
    assert "cached" not in in_chat["meta"] and in_chat["content"] == "Port 8080 again [1]."

    new = GUIDE.replace(b"8080", b"9443")
    url = f"/api/v1/documents/{document['id']}/versions"
    assert (await upload(client, headers, "gateway.txt", new, url=url)).status_code == 202
    await IngestionWorker(cached).run_until_idle()
    fresh_llm.script("Port 9443 [1].")
    after_version = _answer(await ask(client, headers, QUESTION))
    assert "cached" not in after_version["meta"] and "9443" in after_version["content"]

    deleted = await client.delete(f"/api/v1/documents/{document['id']}", headers=headers)
    assert deleted.status_code == 204
    fresh_llm.script("I do not know.")
    after_delete = _answer(await ask(client, headers, QUESTION))
    assert "cached" not in after_delete["meta"] and after_delete["sources"] is None
    assert "9443" not in after_delete["content"]


async def test_a_colleague_with_the_same_scope_gets_their_own_answer(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    olga, vera = await auth_headers(client), await auth_headers(client)
    document = await upload_and_process(client, cached, olga, "gateway.txt", GUIDE)
    created = (await client.post("/api/v1/collections", headers=olga, json={"name": "Ops"})).json()
    collection = created["id"]
    url = f"/api/v1/collections/{collection}"
    assert (await client.put(f"{url}/documents/{document['id']}", headers=olga)).status_code == 204
    vera_email = (await client.get("/api/v1/users/me", headers=vera)).json()["email"]
    invited = await client.post(
        f"{url}/members", headers=olga, json={"email": vera_email, "role": "viewer"}
    )
    assert invited.status_code == 201
    assert (await client.post(f"{url}/invitation/accept", headers=vera)).status_code == 200

    fresh_llm.script("Port 8080 [1].")
    asked = _answer(await ask(client, olga, QUESTION, collection_ids=[collection]))
    assert "cached" not in asked["meta"]
    # The same question of the same documents: the model answers Vera (issue 67: an answer is
    # never reused across people).
    fresh_llm.script("Port 8080, for Vera [1].")
    calls = len(fresh_llm.requests)
    theirs = _answer(await ask(client, vera, QUESTION, collection_ids=[collection]))
    assert "cached" not in theirs["meta"] and theirs["content"] == "Port 8080, for Vera [1]."
    assert len(fresh_llm.requests) == calls + 1
    # Olga's own repeat is still reused.
    again = _answer(await ask(client, olga, QUESTION, collection_ids=[collection]))
    assert again["meta"]["cached"] is True and again["content"] == asked["content"]
    assert len(fresh_llm.requests) == calls + 1

    # Vera's own entry is hers only while she may read its documents.
    members = (await client.get(f"{url}/members", headers=olga)).json()
    viewer = next(m for m in members if m["role"] == "viewer")
    removed = await client.delete(f"{url}/members/{viewer['id']}", headers=olga)
    assert removed.status_code == 204
    refused = await ask(client, vera, QUESTION, collection_ids=[collection])
    assert refused.status_code == 404
    fresh_llm.script("I cannot tell.")
    revoked = _answer(await ask(client, vera, QUESTION))
    assert "cached" not in revoked["meta"] and revoked["sources"] is None
    assert "8080" not in revoked["content"]


async def test_a_general_answer_is_never_reused_for_another_user(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    """Issue 67: without documents, every user's prompt is the same, and user B asking a near
    question got user A's cached answer, which held A's password from A's question; an exact
    repeat told B that someone had asked."""
    alice, bob, carol = [await auth_headers(client) for _ in range(3)]
    question = "My wifi password is Tulip-4471-Quartz, can you make it stronger?"
    fresh_llm.script("Try Tulip-4471-Quartz-Harbor-Lantern.")
    first = _answer(await ask(client, alice, question))
    assert first["sources"] is None and "cached" not in first["meta"]

    # Bob asks the same words, Carol nearly the same: the model answers each of them.
    for user, asked, reply in (
        (bob, question, "I cannot see your password; choose a long passphrase."),
        (carol, "My wifi password is Tulip-4471-Quartz, could you make it stronger?", "Add words."),
    ):
        fresh_llm.script(reply)
        calls = len(fresh_llm.requests)
        answered = _answer(await ask(client, user, asked))
        assert "cached" not in answered["meta"] and answered["content"] == reply
        assert len(fresh_llm.requests) == calls + 1
        assert fresh_llm.last_request["messages"][-1]["content"] == asked

    # Alice's own repeat is reused.
    calls = len(fresh_llm.requests)
    again = _answer(await ask(client, alice, question))
    assert again["meta"]["cached"] is True and again["content"] == first["content"]
    assert len(fresh_llm.requests) == calls


async def test_entries_kept_before_answers_belonged_to_their_asker_are_dropped(
    database_url: str,
) -> None:
    """The upgrade removes the entries cached under the shared keys (no asker to give them
    to), through the real migrations (this run's database, taken back a release and up)."""
    engine = create_engine(database_url, pool_size=1)
    try:
        await alembic(database_url, "downgrade", "0030")
        async with engine.begin() as connection:
            await connection.execute(
                sa.text(
                    "INSERT INTO answer_cache (id, context_key, question, normalised, vector, "
                    "content, model) VALUES (:id, :key, 'q', 'q', ARRAY[0.5]::real[], "
                    "'A password answer', 'm')"
                ),
                {"id": uuid.uuid4(), "key": b"k" * 32},
            )
    finally:
        await alembic(database_url, "upgrade", "head")
    try:
        async with engine.begin() as connection:
            assert await connection.scalar(sa.text("SELECT count(*) FROM answer_cache")) == 0
            columns = await connection.run_sync(
                lambda sync: [c["name"] for c in sa.inspect(sync).get_columns("answer_cache")]
            )
            assert "user_id" in columns
    finally:
        await engine.dispose()


async def test_a_quoted_answer_given_for_a_bare_one_is_not_kept(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    """Twice "[1]": the answer is quoted from the passage instead. Kept, the quote came back
    on the next ask as if the model had written it, without the retry or its reason."""
    headers = await auth_headers(client)
    await upload_and_process(client, cached, headers, "gateway.txt", GUIDE)
    fresh_llm.script("[1]", "[1]")
    first = _answer(await ask(client, headers, QUESTION))
    assert first["meta"]["extractive_reason"] == "bare"
    fresh_llm.script("The console is on port 8080 [1].")
    again = _answer(await ask(client, headers, QUESTION))
    assert "cached" not in again["meta"] and again["content"].startswith("The console")


async def test_regenerating_asks_the_model_again(
    client: httpx.AsyncClient, cached: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    await upload_and_process(client, cached, headers, "gateway.txt", GUIDE)
    fresh_llm.script("Port 8080 [1].")
    first = await ask(client, headers, QUESTION)
    chat_id, question = first.json()["chat_id"], first.json()["user_message"]["id"]
    fresh_llm.script("The admin console listens on 8080 [1].")
    again = _answer(await ask(client, headers, QUESTION, chat_id=chat_id, replaces=question))
    assert "cached" not in again["meta"]
    assert again["content"] == "The admin console listens on 8080 [1]."


def test_nearly_the_same_question_keeps_what_it_asks() -> None:
    assert normalised("Which port, the gateway?") == normalised("which  port gateway")
    assert decisive_words("When was it founded?") != decisive_words("Where was it founded?")
    assert decisive_words("Is 8080 open?") != decisive_words("Is 9443 open?")
    assert decisive_words("Why isn't it open?") == ["not", "why"]
