"""Long conversations (issue 42): a chat's own history length, earlier exchanges chosen by
relevance, and the running summary written after answers in the background."""

from __future__ import annotations

import uuid

import httpx
import pytest

from docchat.answers import extractive
from docchat.chats import history
from docchat.chats.models import Chat
from docchat.chats.summaries import Summaries
from docchat.llm import prompts
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.users import auth_headers


def _history(fresh_llm: ScriptedLLM) -> list[str]:
    """The user questions of the last prompt's history."""
    messages = fresh_llm.last_request["messages"][1:-1]
    return [m["content"] for m in messages if m["role"] == "user"]


async def test_a_chat_sets_how_many_exchanges_its_questions_remember(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    defaults = (await client.get("/api/v1/chats/answer-settings", headers=headers)).json()
    assert defaults["history_pairs"] == 10 and defaults["history_pairs_limit"] == 50
    # Unrelated questions: none brings an earlier one in besides the window.
    asked = [
        "How do sourdough starters work?",
        "When is high tide in Brest?",
        "Which chess opening suits beginners?",
        "Where do alpine roses grow?",
        "How are tax forms filed?",
        "What is a good name for a cat?",
        "How fast do glaciers move?",
        "Who paints lighthouses?",
    ]
    chat_id = None
    for turn in range(5):
        chat_id = (await ask(client, headers, asked[turn], chat_id=chat_id)).json()["chat_id"]
    url = f"/api/v1/chats/{chat_id}"
    changed = await client.patch(url, headers=headers, json={"history_pairs": 2})
    assert changed.status_code == 200 and changed.json()["history_pairs"] == 2
    await ask(client, headers, asked[5], chat_id=chat_id)
    assert _history(fresh_llm) == asked[3:5]

    await client.patch(url, headers=headers, json={"history_pairs": 0})
    await ask(client, headers, asked[6], chat_id=chat_id)
    assert len(fresh_llm.last_request["messages"]) == 2  # the system message and the question

    refused = await client.patch(url, headers=headers, json={"history_pairs": 51})
    assert refused.status_code == 422 and "at most 50" in refused.json()["detail"]
    negative = await client.patch(url, headers=headers, json={"history_pairs": -1})
    assert negative.status_code == 422
    back = await client.patch(url, headers=headers, json={"history_pairs": None})
    assert back.json()["history_pairs"] is None
    await ask(client, headers, asked[7], chat_id=chat_id)
    assert _history(fresh_llm) == asked[:7]


async def test_the_last_ten_exchanges_stay_and_a_related_earlier_one_comes_besides(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    """Issue 67: the 12th question of a chat carried pairs 1-4 and 6-11, pair 5 (one of the
    last 10) dropped for older related ones. The last 10 always come; relevance adds the
    related pair 1, which had left the window."""
    headers = await auth_headers(client)
    fresh_llm.script("The Zephyr bridge over the Varn river was designed by Ingrid Lindqvist.")
    first = await ask(client, headers, "Who designed the Zephyr bridge over the Varn river?")
    chat_id = first.json()["chat_id"]
    asked = ["Who designed the Zephyr bridge over the Varn river?"]
    for detail in ("long", "wide", "old"):  # pairs 2-4: about the bridge too
        asked.append(f"How {detail} is the Zephyr bridge over the Varn river?")
        await ask(client, headers, asked[-1], chat_id=chat_id)
    topics = ["sourdough starters", "tide tables", "chess openings", "alpine roses", "tax forms"]
    for turn in range(7):  # pairs 5-11
        asked.append(f"Tell me about {topics[turn % 5]}, part {turn}")
        await ask(client, headers, asked[-1], chat_id=chat_id)
    await ask(client, headers, "When was the Zephyr bridge over the Varn opened?", chat_id=chat_id)
    remembered = _history(fresh_llm)
    assert remembered[-10:] == asked[1:11]  # pairs 2-11, oldest first
    assert remembered == asked  # and the related pair 1 before them
    assert "Ingrid Lindqvist" in fresh_llm.prompt_text()


async def test_exchanges_leaving_the_window_are_summarised_in_the_background(
    live_client: httpx.AsyncClient, live_components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(live_client)
    summaries = live_components.message_flow.summaries
    fresh_llm.script("Ferries leave at seven.")
    chat_id = (await ask(live_client, headers, "When do ferries leave?")).json()["chat_id"]
    url = f"/api/v1/chats/{chat_id}"
    await live_client.patch(url, headers=headers, json={"history_pairs": 1})
    # The second answer pushes the first exchange out of the one-pair window: the model is
    # asked (after the answer) to fold it into the summary.
    fresh_llm.script("Tickets cost 5 euros.", "The user asked about ferry times: seven.")
    await ask(live_client, headers, "What do tickets cost?", chat_id=chat_id)
    await summaries.wait()
    fold = fresh_llm.requests[-1]["messages"]
    assert fold[0]["content"].startswith(prompts.SUMMARY_SYSTEM.split("{")[0])
    assert (
        "(none yet)" in fold[1]["content"] and "User: When do ferries leave?" in fold[1]["content"]
    )
    assert "Tickets" not in fold[1]["content"]  # still in the window
    detail = (await live_client.get(url, headers=headers)).json()
    assert detail["summary"] == "The user asked about ferry times: seven."
    assert detail["summary_updated_at"] is not None
    # The summary's tokens count toward its owner's quota, beside the answers'.
    listed = (await live_client.get(f"{url}/messages", headers=headers)).json()["items"]
    answers = sum(
        (m["prompt_tokens"] or 0) + (m["completion_tokens"] or 0)
        for m in listed
        if m["role"] == "assistant"
    )
    usage = (await live_client.get("/api/v1/users/me/usage", headers=headers)).json()
    assert usage["tokens_today"] > answers

    # The next question carries the summary, then the window; the fold after it adds only
    # the exchange that left since, to the summary so far.
    fresh_llm.script("Yes, dogs travel free.", "Ferry times: seven; tickets: 5 euros.")
    await ask(live_client, headers, "Can dogs come?", chat_id=chat_id)
    await summaries.wait()
    answered = fresh_llm.requests[-2]["messages"]
    assert (
        "<summary>\nThe user asked about ferry times: seven.\n</summary>"
        in (answered[0]["content"])
    )
    assert [m["content"] for m in answered[1:]] == [
        "What do tickets cost?",
        "Tickets cost 5 euros.",
        "Can dogs come?",
    ]
    fold = fresh_llm.requests[-1]["messages"][1]["content"]
    assert "Summary so far:\nThe user asked about ferry times: seven." in fold
    assert "User: What do tickets cost?" in fold and "ferries leave" not in fold
    summary = (await live_client.get(url, headers=headers)).json()["summary"]
    assert summary == "Ferry times: seven; tickets: 5 euros."

    # A chat set to remember nothing sends no summary either.
    await live_client.patch(url, headers=headers, json={"history_pairs": 0})
    fresh_llm.script("On its own.")
    await ask(live_client, headers, "Anything else?", chat_id=chat_id)
    await summaries.wait()
    alone = fresh_llm.requests[-1]["messages"]
    assert len(alone) == 2 and "Summary of the earlier" not in alone[0]["content"]
    await live_client.patch(url, headers=headers, json={"history_pairs": 1})

    # Editing the first question removes what the summary covers: it starts over (nothing
    # has left the window of the edited chat yet) and the edited question's prompt has none.
    messages = (await live_client.get(f"{url}/messages", headers=headers)).json()["items"]
    fresh_llm.script("Buses leave at eight.")
    edited = await ask(
        live_client, headers, "When do buses leave?", chat_id=chat_id, replaces=messages[0]["id"]
    )
    assert edited.status_code == 200, edited.text
    assert (
        "Summary of the earlier conversation"
        not in fresh_llm.requests[-1]["messages"][0]["content"]
    )
    await summaries.wait()
    detail = (await live_client.get(url, headers=headers)).json()
    assert detail["summary"] is None
    async with live_components.sessionmaker() as session:
        chat = await session.get(Chat, detail["id"])
        assert chat is not None and chat.summary_through_seq == 0


async def test_a_failing_model_leaves_the_summary_as_it_was_and_the_answer_unharmed(
    live_client: httpx.AsyncClient, live_components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(live_client)
    fresh_llm.script("One.")
    chat_id = (await ask(live_client, headers, "First?")).json()["chat_id"]
    await live_client.patch(f"/api/v1/chats/{chat_id}", headers=headers, json={"history_pairs": 1})
    fresh_llm.script("Two.", Reply(status=500))
    answer = await ask(live_client, headers, "Second?", chat_id=chat_id)
    assert answer.status_code == 200
    summaries = live_components.message_flow.summaries
    await summaries.wait()
    assert fresh_llm.requests[-1]["messages"][0]["content"].startswith("You keep a running")
    detail = (await live_client.get(f"/api/v1/chats/{chat_id}", headers=headers)).json()
    assert detail["summary"] is None
    # The next answer tries again, from the same place.
    fresh_llm.script("Three.", "Asked: first, second.")
    await ask(live_client, headers, "Third?", chat_id=chat_id)
    await summaries.wait()
    fold = fresh_llm.requests[-1]["messages"][1]["content"]
    assert "User: First?" in fold and "User: Second?" in fold and "Third" not in fold
    detail = (await live_client.get(f"/api/v1/chats/{chat_id}", headers=headers)).json()
    assert detail["summary"] == "Asked: first, second."


@pytest.mark.parametrize("relevance", [True, False], ids=["relevance", "latest-only"])
async def test_a_summary_is_written_once_half_the_window_has_left_it(
    live_client: httpx.AsyncClient,
    live_components: Components,
    fresh_llm: ScriptedLLM,
    relevance: bool,
) -> None:
    """A model writes a long chat's summary every few answers, not after each one (it did: one
    more model call per question once a chat was past its window), with or without history
    chosen by relevance (without, the turn read only the window and never saw enough leave)."""
    flow = live_components.message_flow
    kept = flow.relevance
    if not relevance:
        object.__setattr__(flow, "relevance", None)  # a frozen dataclass, as components build it
    try:
        await _folds_two_exchanges_at_a_time(live_client, flow.summaries, fresh_llm)
    finally:
        object.__setattr__(flow, "relevance", kept)


async def _folds_two_exchanges_at_a_time(
    live_client: httpx.AsyncClient, summaries: Summaries, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(live_client)
    chat_id = (await ask(live_client, headers, "Question 1?")).json()["chat_id"]
    await live_client.patch(f"/api/v1/chats/{chat_id}", headers=headers, json={"history_pairs": 4})

    def folds() -> list[str]:
        system = prompts.SUMMARY_SYSTEM.split("{")[0]
        return [
            request["messages"][1]["content"]
            for request in fresh_llm.requests
            if request["messages"][0]["content"].startswith(system)
        ]

    for number in range(2, 10):
        fresh_llm.script(f"Answer {number}.")  # a fold gets the default reply
        await ask(live_client, headers, f"Question {number}?", chat_id=chat_id)
        await summaries.wait()
        # A window of 4 is folded two exchanges at a time: after the 6th and the 8th answer.
        assert len(folds()) == {6: 1, 7: 1, 8: 2, 9: 2}.get(number, 0), number
    first, second = folds()
    assert "User: Question 1?" in first and "User: Question 2?" in first
    assert "Question 3?" not in first
    assert "User: Question 3?" in second and "User: Question 4?" in second
    assert "Question 5?" not in second


async def test_an_edit_that_takes_the_summary_back_has_it_written_again_at_once(
    live_client: httpx.AsyncClient, live_components: Components, fresh_llm: ScriptedLLM
) -> None:
    """Editing a question the summary covers starts the summary over; if the edited chat is
    still past its window, the edit's answer folds it again (it waited for half a window of new
    exchanges)."""
    headers = await auth_headers(live_client)
    summaries = live_components.message_flow.summaries
    chat_id = (await ask(live_client, headers, "Question 1?")).json()["chat_id"]
    url = f"/api/v1/chats/{chat_id}"
    await live_client.patch(url, headers=headers, json={"history_pairs": 2})
    for number in range(2, 6):  # a window of 2 is folded one exchange at a time
        await ask(live_client, headers, f"Question {number}?", chat_id=chat_id)
        await summaries.wait()
    messages = (await live_client.get(f"{url}/messages", headers=headers)).json()["items"]
    third = messages[4]
    assert third["content"] == "Question 3?"
    async with live_components.sessionmaker() as session:
        chat = await session.get(Chat, uuid.UUID(chat_id))
        assert chat is not None and chat.summary is not None  # Q1-Q3 have left the window
    requests = len(fresh_llm.requests)
    fresh_llm.script("Edited answer.", "Question 1, summarised again.")
    edited = await ask(
        live_client, headers, "Question 3, edited?", chat_id=chat_id, replaces=third["id"]
    )
    assert edited.status_code == 200, edited.text
    await summaries.wait()
    # The edited chat: Q1, Q2 and the edited Q3; Q1 is past a window of 2 and its summary,
    # which covered Q3, starts over with it.
    folds = fresh_llm.requests[requests + 1 :]
    assert len(folds) == 1
    transcript = folds[0]["messages"][1]["content"]
    assert "(none yet)" in transcript and "User: Question 1?" in transcript
    assert "Question 2?" not in transcript
    detail = (await live_client.get(url, headers=headers)).json()
    assert detail["summary"] == "Question 1, summarised again."


async def test_a_chats_first_question_past_its_window_finds_every_exchange_embedded(
    client: httpx.AsyncClient, components: Components, fresh_llm: ScriptedLLM
) -> None:
    """The answer that takes a chat past its window has every earlier exchange embedded in the
    background, so the next question compares them without a model run on its path (it
    embedded the exchanges from before the window filled there: 50 ms at 10 exchanges)."""
    relevance = components.message_flow.relevance
    assert relevance is not None
    headers = await auth_headers(client)
    chat_id = (await ask(client, headers, "Question 1?")).json()["chat_id"]
    await client.patch(f"/api/v1/chats/{chat_id}", headers=headers, json={"history_pairs": 4})
    for number in range(2, 6):
        await ask(client, headers, f"Question {number}?", chat_id=chat_id)
    await relevance.vectors.wait()
    messages = (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)).json()
    pairs = zip(messages["items"][::2], messages["items"][1::2], strict=True)
    texts = [
        history.relevance_text(q["content"], extractive.for_history(a["content"])) for q, a in pairs
    ]
    assert len(texts) == 5
    assert all(relevance.vectors.holds(text) for text in texts)
