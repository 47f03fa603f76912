"""Quotas that hold: streamed answers count even when the model reports no usage, and parallel
requests cannot all pass a check before any of them is counted (tokens or stored bytes).

The parallel tests send their requests at once through `live_client`, whose requests commit
for real on a pool of connections, as the server's do."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.events.models import Event
from docchat.events.service import RESPONSE_GENERATED
from docchat.main.components import Components
from docchat.quotas.models import TokenHold
from docchat.users.models import User
from tests.support.chat import ask, ask_streaming
from tests.support.documents import upload
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

ANSWER = "Deployments happen on Thursdays after the review, as the handbook says."


async def _me(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    return str((await client.get("/api/v1/users/me", headers=headers)).json()["id"])


async def _tokens_today(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    usage = (await client.get("/api/v1/users/me/usage", headers=headers)).json()
    return int(usage["tokens_today"])


async def _limit(components: Components, user_id: str, **limits: int) -> None:
    async with components.sessionmaker() as session:
        await session.execute(update(User).where(User.id == uuid.UUID(user_id)).values(**limits))
        await session.commit()


async def test_streams_without_reported_usage_still_count(
    app: FastAPI,
    client: httpx.AsyncClient,
    session: AsyncSession,
    components: Components,
    fresh_llm: ScriptedLLM,
) -> None:
    headers = await auth_headers(client)
    user_id = await _me(client, headers)
    await _limit(components, user_id, daily_token_limit=1_000_000)
    silent = Reply(content=ANSWER, report_usage=False)
    fresh_llm.script(silent, silent, silent, silent)

    response, events = await ask_streaming(client, headers, "When do deployments happen?")
    assert response.status_code == 200 and events[-1][0] == "done", response.text
    after_chat = await _tokens_today(client, headers)
    assert after_chat > len(ANSWER) // 4, "a streamed answer without usage cost nothing"

    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    try:
        for extra in ({"extra_body": {"index_name": "all"}}, {}):  # over documents; straight
            stream = await sdk.chat.completions.create(
                model="scripted-model",
                messages=[{"role": "user", "content": "When do deployments happen?"}],
                stream=True,
                **extra,  # type: ignore[arg-type]
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            assert ANSWER.split()[0] in text
    finally:
        await sdk.close()
    after_v1 = await _tokens_today(client, headers)
    assert after_v1 >= after_chat + 2 * (len(ANSWER) // 4)

    answers = (
        await session.execute(
            select(Event.payload).where(
                Event.user_id == uuid.UUID(user_id), Event.type == RESPONSE_GENERATED
            )
        )
    ).scalars()
    payloads: list[dict[str, Any]] = list(answers)
    assert len(payloads) == 3 and all(p["tokens_estimated"] is True for p in payloads)
    assert (await session.execute(select(TokenHold))).first() is None, "a hold was left behind"


async def test_parallel_answers_pass_the_token_quota_by_one_answer_at_most(
    live_client: httpx.AsyncClient, live_components: Components, fresh_llm: ScriptedLLM
) -> None:
    headers = await auth_headers(live_client)
    limit = 300
    await _limit(live_components, await _me(live_client, headers), daily_token_limit=limit)
    fresh_llm.default = Reply(content=ANSWER, delay_seconds=0.3)
    try:
        results = await asyncio.gather(
            *(
                ask(live_client, headers, f"Question number {n} about deployments?")
                for n in range(40)
            )
        )
    finally:
        fresh_llm.default = Reply(content="I am the scripted model.")
    codes = [result.status_code for result in results]
    assert set(codes) <= {200, 429} and 200 in codes
    spent = [
        r.json()["assistant_message"]["prompt_tokens"]
        + r.json()["assistant_message"]["completion_tokens"]
        for r in results
        if r.status_code == 200
    ]
    used = await _tokens_today(live_client, headers)
    assert used == sum(spent)
    assert used <= limit + max(spent), f"{len(spent)} answers used {used} of {limit} tokens"
    refused = next(r for r in results if r.status_code == 429)
    assert "quota" in refused.json()["detail"] and int(refused.headers["retry-after"]) > 0


@pytest.mark.parametrize("uploads", [12])
async def test_parallel_uploads_cannot_pass_the_storage_quota(
    live_client: httpx.AsyncClient, live_components: Components, uploads: int
) -> None:
    headers = await auth_headers(live_client)
    await _limit(live_components, await _me(live_client, headers), storage_limit_mb=1)
    files = [
        (f"notes-{n}.txt", (f"File {n}. " + "Plain text for the quota. " * 17_000).encode())
        for n in range(uploads)
    ]
    assert all(400_000 < len(content) < 460_000 for _, content in files)
    results = await asyncio.gather(
        *(upload(live_client, headers, name, content) for name, content in files)
    )
    accepted = [r for r in results if r.status_code == 202]
    assert {r.status_code for r in results} <= {202, 429}
    assert len(accepted) == 2, [r.status_code for r in results]
    usage = (await live_client.get("/api/v1/users/me/usage", headers=headers)).json()
    assert usage["stored_bytes"] <= usage["storage_limit_bytes"] == 1024 * 1024
    listed = (await live_client.get("/api/v1/documents", headers=headers)).json()
    assert listed["total"] == 2
