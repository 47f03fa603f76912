"""Answer settings per chat (issue 19): a chat's model and strict mode apply to each of its
messages unless a message says otherwise; the defaults and choices are there to show."""

from __future__ import annotations

import httpx

from docchat.llm import prompts
from tests.support.chat import ask
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers


async def test_a_chats_model_and_strict_mode_apply_to_its_messages(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    defaults = (await client.get("/api/v1/chats/answer-settings", headers=headers)).json()
    assert defaults["model"] in defaults["models"] and "override" in defaults["models"]
    assert defaults["strict"] is False

    fresh_llm.script("Hello!")
    chat_id = (await ask(client, headers, "Say hello")).json()["chat_id"]
    url = f"/api/v1/chats/{chat_id}"
    changed = await client.patch(url, headers=headers, json={"model": "override", "strict": True})
    assert changed.status_code == 200, changed.text
    assert changed.json()["model"] == "override" and changed.json()["strict"] is True

    # Strict: no documents match, so the fixed "not found" answer, without a model call.
    calls = len(fresh_llm.requests)
    strict = (await ask(client, headers, "What is the capital of France?", chat_id=chat_id)).json()
    assert strict["assistant_message"]["content"] == prompts.NOT_FOUND_ANSWER
    assert len(fresh_llm.requests) == calls

    # A message's own options still win; the chat's model is used.
    fresh_llm.script("Paris.")
    body = {"content": "And of Italy?", "chat_id": chat_id, "options": {"strict": False}}
    answer = (await client.post("/api/v1/messages", headers=headers, json=body)).json()
    assert answer["assistant_message"]["content"] == "Paris."
    assert fresh_llm.requests[-1]["model"] == "override"
    assert answer["assistant_message"]["model"] == "override"

    # Back to the defaults.
    reset = await client.patch(url, headers=headers, json={"model": None, "strict": None})
    assert reset.json()["model"] is None and reset.json()["strict"] is None
    fresh_llm.script("Rome.")
    await ask(client, headers, "And of Italy?", chat_id=chat_id)
    assert fresh_llm.requests[-1]["model"] == defaults["model"]


async def test_a_model_the_server_does_not_offer_is_refused(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script("Hello!")
    chat_id = (await ask(client, headers, "Say hello")).json()["chat_id"]
    refused = await client.patch(
        f"/api/v1/chats/{chat_id}", headers=headers, json={"model": "gpt-unknown"}
    )
    assert refused.status_code == 400 and "not available" in refused.json()["detail"]
