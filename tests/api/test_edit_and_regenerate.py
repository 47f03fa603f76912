"""Regenerate an answer and edit a question (issue 19): a message that `replaces` one of the
chat's questions takes its place, with everything after it, once its own answer is saved."""

from __future__ import annotations

from typing import Any

import httpx

from docchat.main.components import Components
from tests.support.chat import ask, ask_streaming, parse_sse
from tests.support.documents import upload_and_process
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.users import auth_headers

LIGHTHOUSE = "The Northwind lighthouse was built in 1874 and its light reaches 22 nautical miles."


async def _messages(
    client: httpx.AsyncClient, headers: dict[str, str], chat_id: str
) -> list[dict[str, Any]]:
    listed = await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)
    assert listed.status_code == 200, listed.text
    items: list[dict[str, Any]] = listed.json()["items"]
    return items


async def test_regenerating_replaces_the_last_answer_and_keeps_the_history(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("Hello there.", "Paris is the capital.")
    chat_id = (await ask(client, headers, "Say hello")).json()["chat_id"]
    second = (await ask(client, headers, "Capital of France?", chat_id=chat_id)).json()
    question = second["user_message"]

    fresh_llm.script("The capital of France is Paris.")
    again = await ask(
        client, headers, question["content"], chat_id=chat_id, replaces=question["id"]
    )
    assert again.status_code == 200, again.text

    # The model saw the first exchange as history, not the answer being replaced.
    shown = fresh_llm.prompt_text()
    assert "Hello there." in shown and "Paris is the capital." not in shown
    contents = [(m["role"], m["content"]) for m in await _messages(client, headers, chat_id)]
    assert contents == [
        ("user", "Say hello"),
        ("assistant", "Hello there."),
        ("user", "Capital of France?"),
        ("assistant", "The capital of France is Paris."),
    ]


async def test_editing_an_earlier_question_removes_what_followed_it(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("One.", "Two.", "Three.")
    first = (await ask(client, headers, "First question")).json()
    chat_id = first["chat_id"]
    await ask(client, headers, "Second question", chat_id=chat_id)
    third = (await ask(client, headers, "Third question", chat_id=chat_id)).json()
    rated = third["assistant_message"]["id"]
    rating = await client.put(
        f"/api/v1/chats/{chat_id}/messages/{rated}/feedback", headers=headers, json={"rating": "up"}
    )
    assert rating.status_code == 200

    fresh_llm.script("Edited answer.")
    edited = await ask(
        client,
        headers,
        "Second question, better asked",
        chat_id=chat_id,
        replaces=(await _messages(client, headers, chat_id))[2]["id"],
    )
    assert edited.status_code == 200, edited.text
    contents = [m["content"] for m in await _messages(client, headers, chat_id)]
    assert contents == ["First question", "One.", "Second question, better asked", "Edited answer."]
    # The removed answer's rating went with it.
    stale = await client.put(
        f"/api/v1/chats/{chat_id}/messages/{rated}/feedback", headers=headers, json={"rating": "up"}
    )
    assert stale.status_code == 404


async def test_a_failed_regeneration_loses_nothing(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("The first answer.")
    exchange = (await ask(client, headers, "A question")).json()
    chat_id, question = exchange["chat_id"], exchange["user_message"]

    fresh_llm.script(Reply(status=500))
    failed = await ask(client, headers, "A question", chat_id=chat_id, replaces=question["id"])
    assert failed.status_code == 502
    contents = [m["content"] for m in await _messages(client, headers, chat_id)]
    # The old exchange stays; the retried question is kept too, as any failed message is.
    assert contents == ["A question", "The first answer.", "A question"]


async def test_a_streamed_regeneration_replaces_the_answer(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("Old answer.")
    exchange = (await ask(client, headers, "Tell me a story")).json()
    chat_id, question = exchange["chat_id"], exchange["user_message"]

    fresh_llm.script("A new story begins here.")
    response, events = await ask_streaming(
        client, headers, "Tell me a story", chat_id=chat_id, replaces=question["id"]
    )
    assert response.status_code == 200 and events[-1][0] == "done"
    contents = [m["content"] for m in await _messages(client, headers, chat_id)]
    assert contents == ["Tell me a story", "A new story begins here."]


async def test_regenerating_asks_about_the_questions_documents_again(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "lighthouse.txt", LIGHTHOUSE.encode()
    )
    fresh_llm.script("In 1874 [1].")
    exchange = (
        await ask(client, headers, "When was it built?", document_ids=[document["id"]])
    ).json()
    chat_id, question = exchange["chat_id"], exchange["user_message"]

    fresh_llm.script("It was built in 1874 [1].")
    again = (
        await ask(client, headers, question["content"], chat_id=chat_id, replaces=question["id"])
    ).json()
    answer = again["assistant_message"]
    assert answer["meta"]["scope"] == "message"
    assert [source["document_id"] for source in answer["sources"]] == [document["id"]]


async def test_replacing_needs_a_question_of_the_same_chat(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("A.", "B.")
    one = (await ask(client, headers, "In chat one")).json()
    two = (await ask(client, headers, "In chat two")).json()

    no_chat = await ask(client, headers, "x", replaces=one["user_message"]["id"])
    assert no_chat.status_code == 422
    other_chat = await ask(
        client, headers, "x", chat_id=two["chat_id"], replaces=one["user_message"]["id"]
    )
    assert other_chat.status_code == 404
    an_answer = await ask(
        client, headers, "x", chat_id=one["chat_id"], replaces=one["assistant_message"]["id"]
    )
    assert an_answer.status_code == 404
    assert [m["content"] for m in await _messages(client, headers, one["chat_id"])] == [
        "In chat one",
        "A.",
    ]


async def test_editing_the_first_question_renames_a_chat_named_after_it(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("One.", "Two.", "Pier 4.", "At seven.", "At seven, daily.")
    first = (await ask(client, headers, "Whne does teh ferry leave")).json()
    chat_id, question = first["chat_id"], first["user_message"]["id"]
    second = (await ask(client, headers, "And from which pier?", chat_id=chat_id)).json()

    async def title() -> str:
        chat = await client.get(f"/api/v1/chats/{chat_id}", headers=headers)
        name: str = chat.json()["title"]
        return name

    assert await title() == "Whne does teh ferry leave"
    # Editing a later question leaves the name alone.
    later = second["user_message"]["id"]
    edited = await ask(client, headers, "From which pier?", chat_id=chat_id, replaces=later)
    assert edited.status_code == 200, edited.text
    assert await title() == "Whne does teh ferry leave"
    # The first question names the chat: its edit renames it.
    edited = await ask(
        client, headers, "When does the ferry leave?", chat_id=chat_id, replaces=question
    )
    assert edited.status_code == 200, edited.text
    assert await title() == "When does the ferry leave?"
    # A name the user gave is kept whatever is edited.
    renamed = await client.patch(
        f"/api/v1/chats/{chat_id}", headers=headers, json={"title": "Ferries"}
    )
    assert renamed.status_code == 200, renamed.text
    first_now = edited.json()["user_message"]["id"]
    again = await ask(client, headers, "When does it leave?", chat_id=chat_id, replaces=first_now)
    assert again.status_code == 200, again.text
    assert await title() == "Ferries"


async def test_regenerating_keeps_the_earlier_answers_as_versions(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    """Issue 40: answer versions on regenerate (2/2 with arrows in the web app)."""
    headers = await auth_headers(client)
    fresh_llm.script("Hello there.", "First answer.")
    chat_id = (await ask(client, headers, "Say hello")).json()["chat_id"]
    asked = (await ask(client, headers, "Name a colour", chat_id=chat_id)).json()
    assert asked["assistant_message"]["versions"] == []

    # Rated, then regenerated: the rating judged an answer no longer shown; it goes, and an
    # earlier version cannot be rated (the administrators' review paired it with the wrong
    # question).
    first_answer = asked["assistant_message"]["id"]
    rating_url = f"/api/v1/chats/{chat_id}/messages/{first_answer}/feedback"
    rated = await client.put(rating_url, headers=headers, json={"rating": "down"})
    assert rated.status_code == 200, rated.text
    fresh_llm.script("Second answer.")
    question = asked["user_message"]
    second = await ask(client, headers, "Name a colour", chat_id=chat_id, replaces=question["id"])
    assert second.json()["assistant_message"]["versions"][0]["id"] == first_answer
    again = await client.put(rating_url, headers=headers, json={"rating": "up"})
    assert again.status_code == 404
    assert [v["content"] for v in second.json()["assistant_message"]["versions"]] == [
        "First answer."
    ]
    # Streamed, the third: the done event carries both earlier versions, oldest first.
    fresh_llm.script("Third answer.")
    _, events = await ask_streaming(
        client,
        headers,
        "Name a colour",
        chat_id=chat_id,
        replaces=second.json()["user_message"]["id"],
    )
    done = dict(events)["done"]["assistant_message"]
    assert [v["content"] for v in done["versions"]] == ["First answer.", "Second answer."]
    # Re-attaching to the finished answer tells the same.
    followed = await client.get(f"/api/v1/messages/{done['id']}/stream", headers=headers)
    again = dict(parse_sse(followed.text))["done"]["assistant_message"]
    assert [v["content"] for v in again["versions"]] == ["First answer.", "Second answer."]

    # The conversation is one question and its latest answer; the list carries the versions;
    # the earlier answers are not history, not in the export, not found by a search.
    listed = await _messages(client, headers, chat_id)
    assert [(m["role"], m["content"]) for m in listed][2:] == [
        ("user", "Name a colour"),
        ("assistant", "Third answer."),
    ]
    assert [v["content"] for v in listed[3]["versions"]] == ["First answer.", "Second answer."]
    fresh_llm.script("Noted.")
    await ask(client, headers, "Thanks", chat_id=chat_id)
    shown = fresh_llm.prompt_text()
    assert "Third answer." in shown and "Second answer." not in shown
    export = await client.get(f"/api/v1/chats/{chat_id}/export", headers=headers)
    assert "Third answer." in export.text and "First answer." not in export.text
    found = await client.get("/api/v1/chats", headers=headers, params={"q": "first answer"})
    assert found.json()["total"] == 0

    # An edit (other words) keeps no version; an earlier question's edit drops the versions.
    latest = listed[2]
    fresh_llm.script("Blue.")
    edited = await ask(
        client, headers, "Name a colour of the sky", chat_id=chat_id, replaces=latest["id"]
    )
    assert edited.json()["assistant_message"]["versions"] == []
    listed = await _messages(client, headers, chat_id)
    assert [m["content"] for m in listed][2:] == ["Name a colour of the sky", "Blue."]
