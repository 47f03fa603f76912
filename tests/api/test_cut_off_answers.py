"""A model that stops mid-answer (killed, or a stream that ends with no finish reason) is an
error everywhere: never a saved answer, never a `stop` on the OpenAI-compatible stream
(issue 13, item 8). So is an error event or a line that is not JSON in the middle of the
stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import openai
import pytest
import pytest_asyncio
from fastapi import FastAPI
from openai.types.chat import ChatCompletionChunk

from docchat.llm.client import CUT_OFF, MODEL_FAILED, UNREADABLE
from tests.support.chat import ask_streaming
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

ANSWER = "The bridge was finished in 1932 by Marta Lindqvist after six years of work."
CUTS = [
    pytest.param(Reply(content=ANSWER, cut_after=4, cut="end"), id="stream-ends-early"),
    pytest.param(Reply(content=ANSWER, cut_after=4, cut="drop"), id="connection-drops"),
]
# Streams that break in another way than stopping: what the model's failure is called.
BROKEN = [
    pytest.param(Reply(content=ANSWER, error_after=4), MODEL_FAILED, id="error-event"),
    pytest.param(Reply(content=ANSWER, garbage_after=4), UNREADABLE, id="line-not-json"),
    pytest.param(
        Reply(
            content=ANSWER, garbage_after=4, garbage=b'data: {"choices": [{"delta": "caf\xc3\n\n'
        ),
        UNREADABLE,
        id="line-cut-in-a-character",
    ),
]


# Every test here starts with a model that has no scripted replies and no requests.
pytestmark = pytest.mark.usefixtures("fresh_llm")


@pytest_asyncio.fixture
async def sdk(app: FastAPI, client: httpx.AsyncClient) -> AsyncIterator[openai.AsyncOpenAI]:
    headers = await auth_headers(client)
    sdk = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    yield sdk
    await sdk.close()


async def _ask_streaming_through_v1(
    sdk: openai.AsyncOpenAI, index_name: str | None
) -> openai.AsyncStream[ChatCompletionChunk]:
    """The bridge question, streamed through `/v1`: passed through, or over the documents."""
    extra = {"index_name": index_name} if index_name else {}
    return await sdk.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "When was the bridge finished?"}],
        stream=True,
        extra_body=extra,
    )


async def _saved_roles(
    client: httpx.AsyncClient, headers: dict[str, str], chat_id: str
) -> list[str]:
    saved = (await client.get(f"/api/v1/chats/{chat_id}/messages", headers=headers)).json()
    return [message["role"] for message in saved["items"]]


@pytest.mark.parametrize("reply", CUTS)
async def test_a_cut_off_chat_stream_ends_in_an_error_and_saves_no_answer(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM, reply: Reply
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script(reply)
    _, events = await ask_streaming(client, headers, "When was the bridge finished?")
    names = [name for name, _ in events]
    assert names[-1] == "error" and "done" not in names
    assert events[-1][1] == {"detail": CUT_OFF, "status": 502}
    assert await _saved_roles(client, headers, events[0][1]["chat_id"]) == ["user"]


@pytest.mark.parametrize("reply", CUTS)
@pytest.mark.parametrize("index_name", [None, "all"], ids=["pass-through", "documents"])
async def test_a_cut_off_openai_stream_raises_in_the_sdk_instead_of_stopping(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, reply: Reply, index_name: str | None
) -> None:
    fresh_llm.script(reply)
    stream = await _ask_streaming_through_v1(sdk, index_name)
    finish_reasons: list[str | None] = []

    async def read_all() -> None:
        async for chunk in stream:
            finish_reasons.extend(choice.finish_reason for choice in chunk.choices)

    with pytest.raises(openai.APIError, match="stopped before finishing"):
        await read_all()
    assert "stop" not in finish_reasons


@pytest.mark.parametrize(("reply", "detail"), BROKEN)
async def test_a_broken_stream_is_the_model_s_failure_on_a_chat(
    client: httpx.AsyncClient, fresh_llm: ScriptedLLM, reply: Reply, detail: str
) -> None:
    headers = await auth_headers(client)
    fresh_llm.script(reply)
    _, events = await ask_streaming(client, headers, "When was the bridge finished?")
    assert events[-1] == ("error", {"detail": detail, "status": 502})
    assert await _saved_roles(client, headers, events[0][1]["chat_id"]) == ["user"]


@pytest.mark.parametrize(("reply", "detail"), BROKEN)
@pytest.mark.parametrize("index_name", [None, "all"], ids=["pass-through", "documents"])
async def test_a_broken_stream_reaches_an_openai_client_as_an_error(
    sdk: openai.AsyncOpenAI,
    fresh_llm: ScriptedLLM,
    reply: Reply,
    detail: str,
    index_name: str | None,
) -> None:
    fresh_llm.script(reply)
    stream = await _ask_streaming_through_v1(sdk, index_name)
    with pytest.raises(openai.APIError, match=detail):
        async for _chunk in stream:
            pass


UNREADABLE_REPLIES = [
    pytest.param(("application/json", '{"id": "chatcmpl-1", "choi'), id="json-cut-short"),
    pytest.param(("text/html", "<html><body>Bad gateway</body></html>"), id="html-page"),
    pytest.param(
        ("application/json", b'{"choices": [{"message": {"content": "caf\xc3'),
        id="cut-in-a-character",
    ),
]


@pytest.mark.parametrize("raw_body", UNREADABLE_REPLIES)
@pytest.mark.parametrize("index_name", [None, "all"], ids=["pass-through", "documents"])
async def test_a_whole_answer_that_cannot_be_read_is_the_model_s_failure(
    sdk: openai.AsyncOpenAI,
    fresh_llm: ScriptedLLM,
    raw_body: tuple[str, str | bytes],
    index_name: str | None,
) -> None:
    fresh_llm.script(Reply(raw_body=raw_body))
    extra = {"index_name": index_name} if index_name else {}
    with pytest.raises(openai.APIStatusError, match=UNREADABLE) as raised:
        await sdk.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "When was the bridge finished?"}],
            extra_body=extra,
        )
    assert raised.value.status_code == 502


async def test_a_whole_answer_of_another_shape_is_the_model_s_failure(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    fresh_llm.script(Reply(raw_body=("application/json", '{"choices": ["Nine."]}')))
    with pytest.raises(openai.APIStatusError, match=UNREADABLE):
        await sdk.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "When was the bridge finished?"}],
            extra_body={"index_name": "all"},
        )


# A usage of another shape is no usage (the call's tokens are then estimated); the answer stands.
ODD_USAGE = '{"prompt_tokens": "12", "completion_tokens": 3.5}'


@pytest.mark.parametrize("index_name", [None, "all"], ids=["pass-through", "documents"])
async def test_odd_token_counts_in_a_whole_answer_do_not_fail_it(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, index_name: str | None
) -> None:
    body = (
        '{"id": "c1", "object": "chat.completion", "created": 1, "model": "scripted-model", '
        '"choices": [{"index": 0, "finish_reason": "stop", '
        '"message": {"role": "assistant", "content": "In 1932."}}], '
        f'"usage": {ODD_USAGE}}}'
    )
    fresh_llm.script(Reply(raw_body=("application/json", body)))
    extra = {"index_name": index_name} if index_name else {}
    answer = await sdk.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "When was the bridge finished?"}],
        extra_body=extra,
    )
    assert "1932" in (answer.choices[0].message.content or "")
