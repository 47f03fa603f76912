from __future__ import annotations

import asyncio

import httpx

from tests.support.chat import ask
from tests.support.users import auth_headers


async def test_concurrent_messages_into_one_chat_lose_nothing(
    live_client: httpx.AsyncClient,
) -> None:
    headers = await auth_headers(live_client)
    chat_id = (await ask(live_client, headers, "start")).json()["chat_id"]
    results = await asyncio.gather(
        *(ask(live_client, headers, f"m{i}", chat_id=chat_id) for i in range(6))
    )
    assert [r.status_code for r in results] == [200] * 6
    url = f"/api/v1/chats/{chat_id}/messages?limit=100"
    items = (await live_client.get(url, headers=headers)).json()["items"]
    assert len(items) == 14
    assert sorted(m["content"] for m in items if m["role"] == "user") == sorted(
        ["start", *(f"m{i}" for i in range(6))]
    )
    # Every answer is stored after the question it answers.
    position = {m["id"]: i for i, m in enumerate(items)}
    for result in results:
        body = result.json()
        assert position[body["user_message"]["id"]] < position[body["assistant_message"]["id"]]
