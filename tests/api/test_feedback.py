"""Ratings of answers (issue 19): the chat's owner rates an answer up or down with an optional
comment, sees it again with the chat, and administrators review ratings with the question,
the answer and its sources."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.users import admin_headers, auth_headers


async def _answered(
    client: httpx.AsyncClient, components: Components, llm: ScriptedLLM, headers: dict[str, str]
) -> dict[str, Any]:
    await upload_and_process(
        client, components, headers, "ferry.txt", b"The ferry to the island leaves at 07:40."
    )
    llm.script("At 07:40 [1].")
    response = await ask(client, headers, "When does the ferry to the island leave?")
    assert response.status_code == 200, response.text
    exchange: dict[str, Any] = response.json()
    return exchange


def _feedback_url(exchange: dict[str, Any], message_id: str | None = None) -> str:
    message = message_id or exchange["assistant_message"]["id"]
    return f"/api/v1/chats/{exchange['chat_id']}/messages/{message}/feedback"


async def test_an_answer_is_rated_changed_and_withdrawn_and_the_chat_shows_it(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    exchange = await _answered(client, components, fresh_llm, headers)
    url = _feedback_url(exchange)
    rated = await client.put(url, headers=headers, json={"rating": "down", "comment": "  Wrong  "})
    assert rated.status_code == 200, rated.text
    assert rated.json()["rating"] == "down" and rated.json()["comment"] == "Wrong"
    again = await client.put(url, headers=headers, json={"rating": "up"})
    assert again.json() == {**again.json(), "rating": "up", "comment": None}

    messages_url = f"/api/v1/chats/{exchange['chat_id']}/messages"
    listed = (await client.get(messages_url, headers=headers)).json()["items"]
    assert [m["feedback"] and m["feedback"]["rating"] for m in listed] == [None, "up"]

    assert (await client.delete(url, headers=headers)).status_code == 204
    listed = (await client.get(messages_url, headers=headers)).json()["items"]
    assert listed[1]["feedback"] is None


async def test_only_answers_of_your_own_chats_can_be_rated(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    exchange = await _answered(client, components, fresh_llm, headers)
    stranger = await auth_headers(client)
    body = {"rating": "down", "comment": "spam"}
    assert (
        await client.put(_feedback_url(exchange), headers=stranger, json=body)
    ).status_code == 404
    question = _feedback_url(exchange, exchange["user_message"]["id"])
    assert (await client.put(question, headers=headers, json=body)).status_code == 404
    bad = await client.put(_feedback_url(exchange), headers=headers, json={"rating": "meh"})
    assert bad.status_code == 422
    long = await client.put(
        _feedback_url(exchange), headers=headers, json={"rating": "up", "comment": "x" * 2001}
    )
    assert long.status_code == 422


async def test_administrators_review_ratings_with_question_answer_and_sources(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    session: AsyncSession,
) -> None:
    headers = await auth_headers(client)
    exchange = await _answered(client, components, fresh_llm, headers)
    comment = "It should say which pier"
    await client.put(
        _feedback_url(exchange), headers=headers, json={"rating": "down", "comment": comment}
    )
    admin = await admin_headers(client, session)

    review = await client.get("/api/v1/admin/feedback", headers=admin, params={"rating": "down"})
    assert review.status_code == 200, review.text
    [entry] = [
        e for e in review.json()["items"] if e["message_id"] == exchange["assistant_message"]["id"]
    ]
    assert entry["question"] == "When does the ferry to the island leave?"
    assert entry["answer"] == "At 07:40 [1]." and entry["comment"] == comment
    assert entry["sources"][0]["document_name"] == "ferry.txt"
    assert entry["rating"] == "down" and entry["user_email"].endswith("@example.com")
    ups = await client.get("/api/v1/admin/feedback", headers=admin, params={"rating": "up"})
    assert exchange["assistant_message"]["id"] not in {e["message_id"] for e in ups.json()["items"]}

    # Users do not read the review; a chat its owner deleted leaves it.
    assert (await client.get("/api/v1/admin/feedback", headers=headers)).status_code == 403
    await client.delete(f"/api/v1/chats/{exchange['chat_id']}", headers=headers)
    review = await client.get("/api/v1/admin/feedback", headers=admin)
    assert exchange["assistant_message"]["id"] not in {
        e["message_id"] for e in review.json()["items"]
    }
