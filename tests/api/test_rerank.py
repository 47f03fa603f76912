"""Reranking through a rerank service on loopback (the `/rerank` request shape), end to end."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from pydantic import SecretStr

from docchat.config import RerankSettings
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.api.test_hybrid import CODES, fault_manual
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.rerank_server import RerankServer
from tests.support.users import auth_headers


@pytest.fixture(scope="module")
def rerank_server() -> Iterator[RerankServer]:
    server = RerankServer().start()
    yield server
    server.stop()


@pytest.fixture
def reranker(rerank_server: RerankServer) -> Iterator[RerankServer]:
    rerank_server.reset()
    yield rerank_server
    rerank_server.reset()


WithReranker = Callable[..., Components]


@pytest_asyncio.fixture
async def with_reranker(
    components: Components, reranker: RerankServer
) -> AsyncIterator[WithReranker]:
    """Components whose retriever asks the rerank server; their HTTP clients closed after."""
    made: list[Components] = []

    def build(**extra: Any) -> Components:
        rerank = RerankSettings(
            _env_file=None,  # type: ignore[call-arg]
            url=reranker.url,
            model="test-reranker",
            api_key=SecretStr("rerank-key"),
            **extra,
        )
        settings = components.settings.model_copy(update={"rerank": rerank})
        made.append(dataclasses.replace(components, settings=settings))
        return made[-1]

    yield build
    for built in made:
        await built.retriever.close()


async def _manual(client: httpx.AsyncClient, components: Components) -> dict[str, str]:
    headers = await auth_headers(client)
    document = await upload_and_process(
        client, components, headers, "faults.md", fault_manual().encode()
    )
    assert document["chunk_count"] == len(CODES)
    return headers


async def test_the_reranker_decides_which_passages_the_model_sees(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    reranker: RerankServer,
    with_reranker: WithReranker,
    app: Any,
) -> None:
    headers = await _manual(client, components)
    # The question names no code: the reranker's favourite is one fusion did not put first.
    question = "What should the operator do when the pump controller raises a fault?"
    fresh_llm.script("Stop the pump [1].")
    plain = (await ask(client, headers, question)).json()["assistant_message"]
    first = next(code for code in CODES if code in plain["sources"][0]["content_preview"])
    favourite = CODES[(CODES.index(first) + 5) % len(CODES)]
    reranker.favoured = [favourite.lower()]
    attach_components(app, with_reranker())
    fresh_llm.script("Stop the pump [1].")
    message = (await ask(client, headers, question)).json()["assistant_message"]

    assert favourite in message["sources"][0]["content_preview"]
    sent = reranker.requests[-1]
    assert sent["query"] == question and sent["model"] == "test-reranker"
    assert len(sent["documents"]) == len(CODES)  # every candidate, not just the top 4
    assert reranker.authorizations[-1] == "Bearer rerank-key"
    prompt = fresh_llm.prompt_text()
    assert prompt.index(favourite) < min(
        prompt.index(code) for code in CODES if code != favourite and code in prompt
    )


@pytest.mark.parametrize("behaviour", ["error", "nonsense"])
async def test_a_failing_reranker_leaves_the_fused_order(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    reranker: RerankServer,
    with_reranker: WithReranker,
    app: Any,
    behaviour: str,
) -> None:
    headers = await _manual(client, components)
    question = f"What does fault {CODES[3]} mean?"
    fresh_llm.script("Check the seals [1].")
    plain = (await ask(client, headers, question)).json()["assistant_message"]

    reranker.behaviour = behaviour
    reranker.favoured = [CODES[8].lower()]
    attach_components(app, with_reranker())
    fresh_llm.script("Check the seals [1].")
    response = await ask(client, headers, question)
    assert response.status_code == 200
    message = response.json()["assistant_message"]
    assert reranker.requests, "the reranker was asked"
    assert message["meta"]["grounded"] is True
    assert message["sources"][0]["content_preview"] == plain["sources"][0]["content_preview"]
    assert CODES[3] in message["sources"][0]["content_preview"]


async def test_text_embeddings_inference_shape(
    client: httpx.AsyncClient,
    components: Components,
    fresh_llm: ScriptedLLM,
    reranker: RerankServer,
    with_reranker: WithReranker,
    app: Any,
) -> None:
    headers = await _manual(client, components)
    reranker.favoured = [CODES[1].lower()]
    attach_components(app, with_reranker(texts_field="texts"))
    fresh_llm.script("Stop the pump [1].")
    message = (await ask(client, headers, "How is a pump fault cleared?")).json()
    assert "texts" in reranker.requests[-1] and "documents" not in reranker.requests[-1]
    assert CODES[1] in message["assistant_message"]["sources"][0]["content_preview"]
