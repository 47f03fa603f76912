"""The OpenAI-compatible endpoint, driven by the official `openai` client (seed 000's rules)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.answers import extractive
from docchat.events.models import Event
from docchat.llm import prompts
from docchat.main.components import Components
from tests.support.documents import upload_and_process
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.openai_sdk import sdk_for
from tests.support.users import auth_headers

KAITO = (
    "KAITO is a Kubernetes operator that automates the deployment of AI models. "
    "To install KAITO, run helm install kaito-workspace from the charts folder. "
    "KAITO provisions GPU nodes automatically for each workspace."
)
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


# Every test here starts with a model that has no scripted replies and no requests.
pytestmark = pytest.mark.usefixtures("fresh_llm")


@pytest_asyncio.fixture
async def headers(client: httpx.AsyncClient, components: Components) -> dict[str, str]:
    headers = await auth_headers(client)
    category = (
        await client.post("/api/v1/categories", headers=headers, json={"name": "kaito"})
    ).json()
    await upload_and_process(
        client,
        components,
        headers,
        "kaito.md",
        KAITO.encode(),
        data={"category_id": category["id"]},
    )
    return headers


@pytest_asyncio.fixture
async def sdk(app: FastAPI, headers: dict[str, str]) -> AsyncIterator[openai.AsyncOpenAI]:
    client = sdk_for(app, headers["Authorization"].removeprefix("Bearer "))
    yield client
    await client.close()


async def create(sdk: openai.AsyncOpenAI, messages: list[dict[str, Any]], **extra: Any) -> Any:
    return await sdk.chat.completions.create(model="scripted-model", messages=messages, **extra)  # type: ignore[arg-type, call-overload]


# -- pass-through ------------------------------------------------------------------------------


async def test_no_index_passes_through_unchanged(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    fresh_llm.script("I am fine.")
    messages = [{"role": "user", "content": "Hello, how are you?"}]
    completion = await create(sdk, messages, temperature=0.3)
    assert completion.choices[0].message.content == "I am fine."
    sent = fresh_llm.last_request
    assert sent["messages"] == messages and sent["temperature"] == 0.3 and "index_name" not in sent


async def test_tools_pass_through(sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM) -> None:
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    ]
    await create(
        sdk,
        [{"role": "user", "content": "What's the weather?"}],
        tools=tools,
        extra_body={"index_name": "all"},
    )
    assert fresh_llm.last_request["tools"] == tools
    assert fresh_llm.last_request["messages"] == [
        {"role": "user", "content": "What's the weather?"}
    ]


async def test_unsupported_roles_pass_through(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    messages = [
        {"role": "function", "name": "weather", "content": "Weather data: 75F"},
        {"role": "user", "content": "Thanks!"},
    ]
    await create(sdk, messages, extra_body={"index_name": "all"})
    assert fresh_llm.last_request["messages"] == messages


async def test_non_text_content_passes_through(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    content = [
        {"type": "text", "text": "What's in this image?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    await create(sdk, [{"role": "user", "content": content}], extra_body={"index_name": "all"})
    assert fresh_llm.last_request["messages"][0]["content"] == content


async def test_passthrough_streams(sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM) -> None:
    fresh_llm.script("one two three")
    stream = await create(sdk, [{"role": "user", "content": "count"}], stream=True)
    text = "".join(
        [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    )
    assert text == "one two three"


# -- RAG ---------------------------------------------------------------------------------------


async def test_simple_query_is_grounded_with_sources(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    fresh_llm.script("KAITO is a Kubernetes operator [1].")
    completion = await create(
        sdk,
        [SYSTEM, {"role": "user", "content": "What is KAITO?"}],
        extra_body={"index_name": "all"},
    )
    assert completion.choices[0].message.content == "KAITO is a Kubernetes operator [1]."
    [source] = completion.sources  # type: ignore[attr-defined]
    assert source["document_name"] == "kaito.md"
    sent = fresh_llm.last_request["messages"]
    assert (
        sent[0]["content"].startswith(prompts.GROUNDED_SYSTEM)
        and "helm install" in sent[0]["content"]
    )
    assert sent[1:] == [SYSTEM, {"role": "user", "content": "What is KAITO?"}]


async def test_answers_over_documents_record_the_answer_like_the_chat_routes(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, session: AsyncSession
) -> None:
    fresh_llm.script("KAITO is a Kubernetes operator [1].", "Use helm [1].")
    question = [{"role": "user", "content": "What is KAITO?"}]
    await create(sdk, question, extra_body={"index_name": "all"})
    stream = await create(sdk, question, stream=True, extra_body={"index_name": "all"})
    _ = [chunk async for chunk in stream]
    rows = (
        await session.execute(
            select(Event)
            .where(Event.type == "response_generated")
            .order_by(Event.created_at.desc())
            .limit(2)
        )
    ).scalars()
    recorded = [row.payload for row in rows]
    assert [payload["index"] for payload in recorded] == ["all", "all"]
    assert all(payload["grounded"] and payload["citation_count"] == 1 for payload in recorded)
    assert all(payload["prompt_tokens"] and payload["latency_ms"] >= 0 for payload in recorded)


async def test_multi_turn_searches_the_latest_question_and_keeps_history(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    messages = [
        SYSTEM,
        {"role": "user", "content": "What is KAITO?"},
        {"role": "assistant", "content": "KAITO is a Kubernetes operator for AI workloads."},
        {"role": "user", "content": "How do I install KAITO?"},
    ]
    await create(sdk, messages, extra_body={"index_name": "kaito"})
    sent = fresh_llm.last_request["messages"]
    assert sent[1:] == messages
    assert "helm install" in sent[0]["content"]
    # A latest question that matches nothing is answered from the conversation alone.
    vague = [*messages[:3], {"role": "user", "content": "And the weather in Oslo?"}]
    await create(sdk, vague, extra_body={"index_name": "kaito"})
    assert fresh_llm.last_request["messages"] == vague


async def test_consecutive_user_messages_form_one_query(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    messages = [
        SYSTEM,
        {"role": "user", "content": "What is KAITO?"},
        {"role": "assistant", "content": "KAITO is a Kubernetes operator."},
        {"role": "user", "content": "Tell me more about it."},
        {"role": "user", "content": "Specifically about GPU support."},
    ]
    await create(sdk, messages, extra_body={"index_name": "all"})
    sent = fresh_llm.last_request["messages"]
    assert sent[-1] == {
        "role": "user",
        "content": "Tell me more about it.\n\nSpecifically about GPU support.",
    }
    assert sent[-4:-1] == messages[:3]  # history kept, with or without passages up front


async def test_no_user_prompt_after_assistant_is_400(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    messages = [
        {"role": "user", "content": "What is KAITO?"},
        {"role": "assistant", "content": "KAITO is a Kubernetes operator."},
    ]
    with pytest.raises(openai.BadRequestError) as error:
        await create(sdk, messages, extra_body={"index_name": "all"})
    assert "There must be a user prompt since the latest assistant message." in str(error.value)
    assert fresh_llm.requests == []


async def test_prompt_longer_than_the_window_is_400(
    sdk: openai.AsyncOpenAI, components: Components, fresh_llm: ScriptedLLM
) -> None:
    huge = "word " * (components.settings.llm.context_window * 4 // 5 + 10)
    with pytest.raises(openai.BadRequestError) as error:
        await create(sdk, [{"role": "user", "content": huge}], extra_body={"index_name": "all"})
    assert "context window" in str(error.value)
    assert fresh_llm.requests == []


async def test_max_tokens_is_lowered_to_fit(
    sdk: openai.AsyncOpenAI, components: Components, fresh_llm: ScriptedLLM
) -> None:
    window = components.settings.llm.context_window
    long_question = "KAITO " + "x" * (window * 4 - 8000)  # leaves about 2000 tokens
    await create(
        sdk,
        [{"role": "user", "content": long_question}],
        max_tokens=window,
        extra_body={"index_name": "all"},
    )
    sent = fresh_llm.last_request["max_tokens"]
    assert 0 < sent < window and sent <= 2100


async def test_unknown_or_foreign_index_is_404(
    sdk: openai.AsyncOpenAI, client: httpx.AsyncClient, fresh_llm: ScriptedLLM, app: FastAPI
) -> None:
    with pytest.raises(openai.NotFoundError):
        await create(
            sdk, [{"role": "user", "content": "KAITO?"}], extra_body={"index_name": "nope"}
        )
    # Another user's category name means nothing to this user.
    other = await auth_headers(client)
    stranger = sdk_for(app, other["Authorization"][7:])
    with pytest.raises(openai.NotFoundError):
        await create(
            stranger, [{"role": "user", "content": "KAITO?"}], extra_body={"index_name": "kaito"}
        )
    # With `all`, the stranger searches only what they may read: nothing of ours.
    await create(
        stranger,
        [{"role": "user", "content": "How do I install KAITO?"}],
        extra_body={"index_name": "all"},
    )
    assert "helm install" not in str(fresh_llm.last_request)
    await stranger.close()


async def test_rag_streams_with_sources_on_the_last_chunk(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    fresh_llm.script("Use helm [1].")
    stream = await create(
        sdk,
        [{"role": "user", "content": "How do I install KAITO?"}],
        stream=True,
        extra_body={"index_name": "all"},
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Use helm [1]."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].sources[0]["document_name"] == "kaito.md"  # type: ignore[attr-defined]


async def test_rag_asks_again_for_an_answer_of_bare_markers_then_quotes(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    """A real 1.5B model answered "[1]" alone: asked once more for a sentence; bare twice, the
    documents are quoted instead. Streamed or not, the client never sees a bare "[1]"."""
    question = [{"role": "user", "content": "How do I install KAITO?"}]
    rag = {"index_name": "all"}
    sentence = "Run helm install kaito-workspace from the charts folder [1]."
    fresh_llm.script("[1]", sentence)
    completion = await create(sdk, question, extra_body=rag)
    assert completion.choices[0].message.content == sentence
    assert prompts.BARE_RETRY_INSTRUCTION in fresh_llm.prompt_text()

    fresh_llm.script("[1]", "[1].", "[1]", " [1]")
    completion = await create(sdk, question, extra_body=rag)
    quoted = completion.choices[0].message.content
    stream = await create(sdk, question, stream=True, extra_body=rag)
    streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    for answer in (quoted, streamed):
        assert answer.startswith(extractive.INTRODUCTION) and "helm install" in answer
    assert len(fresh_llm.requests) == 6


async def test_llm_error_reaches_the_client_as_502(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    from tests.support.llm_server import Reply

    fresh_llm.script(Reply(status=500))
    with pytest.raises(openai.InternalServerError) as error:
        await create(
            sdk, [{"role": "user", "content": "What is KAITO?"}], extra_body={"index_name": "all"}
        )
    assert error.value.status_code == 502


async def test_models_and_auth(sdk: openai.AsyncOpenAI, app: FastAPI) -> None:
    models = await sdk.models.list()
    assert [m.id for m in models.data][:1] == ["scripted-model"]
    anonymous = sdk_for(app, "bad")
    with pytest.raises(openai.AuthenticationError):
        await anonymous.models.list()
    await anonymous.close()


async def test_passthrough_refuses_fields_it_does_not_know(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        await create(
            sdk, [{"role": "user", "content": "hi"}], extra_body={"": 1, "top_k_custom": [1, 2]}
        )
    assert "Unsupported field(s) for this endpoint: , top_k_custom" in str(error.value)
    assert fresh_llm.requests == []


# -- pass-through limits and metering (issue 13, item 9) ---------------------------------------


async def test_passthrough_is_clamped_and_only_allowed_models_run(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, components: Components
) -> None:
    hello = [{"role": "user", "content": "hi"}]
    await sdk.chat.completions.create(model="override", messages=hello, n=128, max_tokens=10**7)  # type: ignore[arg-type]
    sent = fresh_llm.last_request
    assert sent["model"] == "override" and sent["n"] == 1
    assert sent["max_tokens"] == components.settings.llm.max_tokens
    with pytest.raises(openai.BadRequestError, match="not available here"):
        await sdk.chat.completions.create(model="gpt-4-32k", messages=hello)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="context window"):
        await create(sdk, [{"role": "user", "content": "x" * 300_000}])
    assert len(fresh_llm.requests) == 1


async def test_passthrough_usage_is_recorded_like_any_answer(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, session: AsyncSession
) -> None:
    fresh_llm.script("one two", "three four")
    await create(sdk, [{"role": "user", "content": "count to two"}])
    stream = await create(sdk, [{"role": "user", "content": "and on"}], stream=True)
    chunks = [chunk async for chunk in stream]
    # Usage was asked for upstream to meter the stream, but the client did not ask for it.
    assert all(chunk.usage is None for chunk in chunks)
    rows = (
        await session.execute(
            select(Event)
            .where(Event.type == "response_generated")
            .order_by(Event.created_at.desc())
            .limit(2)
        )
    ).scalars()
    recorded = [row.payload for row in rows]
    assert [payload["mode"] for payload in recorded] == ["passthrough", "passthrough"]
    assert all(payload["completion_tokens"] is not None for payload in recorded)
    assert all(payload["prompt_tokens"] for payload in recorded)


async def test_passthrough_can_be_turned_off(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM, components: Components
) -> None:
    components.settings.llm.passthrough = False
    try:
        with pytest.raises(openai.PermissionDeniedError, match="send index_name"):
            await create(sdk, [{"role": "user", "content": "hi"}])
        # Answers from documents still work.
        await create(sdk, [{"role": "user", "content": "KAITO?"}], extra_body={"index_name": "all"})
    finally:
        components.settings.llm.passthrough = True
    assert len(fresh_llm.requests) == 1


async def test_a_general_answer_over_an_index_carries_no_markers(
    sdk: openai.AsyncOpenAI, fresh_llm: ScriptedLLM
) -> None:
    question = [{"role": "user", "content": "What is the capital of France?"}]
    fresh_llm.script("Paris [1].", Reply(content="Paris [1][2].", pieces=["Paris [", "1][2", "]."]))
    completion = await create(sdk, question, extra_body={"index_name": "all"})
    assert completion.choices[0].message.content == "Paris."
    assert completion.model_extra["sources"] == []

    stream = await create(sdk, question, stream=True, extra_body={"index_name": "all"})
    chunks = [chunk async for chunk in stream]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Paris."
    assert chunks[-1].model_extra["sources"] == []
