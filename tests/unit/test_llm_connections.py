"""The clients of model servers drop an idle connection before the server does.

The scripted model is served by uvicorn with its default 5 s keep-alive, as vLLM is. With the
SDK's pool keeping idle connections for the same 5 s, a request sent near that moment could
go out on a connection the server was closing, and fail as "unreachable" (a browser test's
second answer, once in CI).
"""

from __future__ import annotations

import asyncio

from docchat.config import EmbeddingSettings, LLMSettings
from docchat.llm.client import LLM
from docchat.llm.connections import IDLE_SECONDS
from docchat.llm.embeddings import Embedder, OpenAIEmbedder
from tests.support.llm_server import ScriptedLLM

SERVER_KEEP_ALIVE_SECONDS = 5.0  # uvicorn's default


async def test_idle_model_connections_are_dropped_before_the_server_drops_them(
    fresh_llm: ScriptedLLM, embedder: Embedder
) -> None:
    assert IDLE_SECONDS < SERVER_KEEP_ALIVE_SECONDS
    fresh_llm.embed_with = embedder
    llm = LLM(
        LLMSettings(_env_file=None, base_url=fresh_llm.base_url, model="m", max_retries=0)  # type: ignore[call-arg]
    )
    embeddings = await asyncio.to_thread(
        OpenAIEmbedder,
        EmbeddingSettings(  # type: ignore[call-arg]
            _env_file=None, backend="openai", base_url=fresh_llm.base_url, max_retries=0
        ),
    )
    question = [{"role": "user", "content": "When does the ferry leave?"}]

    async def both() -> list[int]:
        fresh_llm.client_ports.clear()
        await llm.complete(question)
        await asyncio.to_thread(embeddings.embed, ["the ferry"])
        return list(fresh_llm.client_ports)

    try:
        first = await both()
        at_once = await both()
        # Idle for longer than the client keeps a connection, not as long as the server does.
        await asyncio.sleep((IDLE_SECONDS + SERVER_KEEP_ALIVE_SECONDS) / 2)
        later = await both()
    finally:
        fresh_llm.embed_with = None
        await llm.close()
        embeddings.close()
    assert at_once == first  # a busy client keeps its connections
    assert not set(later) & set(first)  # an idle one opens new ones
