"""A reranker reached over HTTP: the `/rerank` request most rerank servers accept.

    POST {RERANK_URL}  {"model": ..., "query": ..., "documents": [...], "top_n": n}
    -> {"results": [{"index": i, "relevance_score": s}, ...]}

That is the shape of Cohere's, Jina's, Voyage's and vLLM's rerank APIs, of llama.cpp's server
(`--reranking`) and of Infinity; Hugging Face's text-embeddings-inference (`POST /rerank` with
`texts`) answers with a bare list of `{"index", "score"}`, which is read too, and is reached by
setting `RERANK_TEXTS_FIELD=texts`. The reranker only reorders: the similarity floor still
judges each passage by its cosine similarity. When the service fails or answers nonsense, the
fused order stands and the failure is logged; an answer never fails for its reranker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import httpx

from docchat.config import RerankSettings
from docchat.retrieval.index import ScoredChunk

logger = logging.getLogger(__name__)


class RerankError(RuntimeError):
    pass


def _scores_by_index(body: Any, count: int) -> dict[int, float]:
    results = body.get("results", body.get("data")) if isinstance(body, dict) else body
    if not isinstance(results, list):
        raise RerankError("the rerank response has no results list")
    scores: dict[int, float] = {}
    for item in results:
        if not isinstance(item, dict):
            raise RerankError("a rerank result is not an object")
        index, score = item.get("index"), item.get("relevance_score", item.get("score"))
        if not isinstance(index, int) or not 0 <= index < count:
            raise RerankError(f"a rerank result points at no document: {index!r}")
        if not isinstance(score, int | float):
            raise RerankError("a rerank result has no numeric score")
        scores[index] = float(score)
    return scores


class HttpReranker:
    @classmethod
    def from_settings(cls, settings: RerankSettings) -> HttpReranker | None:
        """The reranker RERANK_URL names, or None when it names none."""
        return cls(settings) if settings.url else None

    def __init__(self, settings: RerankSettings) -> None:
        if not settings.url:
            raise ValueError("RERANK_URL is not set")
        self.settings = settings
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            headers = {}
            if key := self.settings.api_key.get_secret_value():
                headers["Authorization"] = f"Bearer {key}"
            self._client = httpx.AsyncClient(timeout=self.settings.timeout_seconds, headers=headers)
            self._loop = loop
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        """Relevance of each document to the query, by position; raises RerankError."""
        settings = self.settings
        payload: dict[str, Any] = {
            "query": query,
            settings.texts_field: list(documents),
            "top_n": len(documents),
            "return_documents": False,
        }
        if settings.model:
            payload["model"] = settings.model
        try:
            response = await self._http().post(str(settings.url), json=payload)
            response.raise_for_status()
            return _scores_by_index(response.json(), len(documents))
        except (httpx.HTTPError, ValueError) as exc:
            raise RerankError(f"rerank service: {exc}") from exc

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], top_k: int
    ) -> list[ScoredChunk]:
        """The candidates best first by the service's scores; unscored ones keep their order
        after the scored ones. On failure, the candidates as they came."""
        if len(candidates) < 2:
            return list(candidates)
        try:
            scores = await self.scores(query, [hit.chunk.text for hit in candidates])
        except RerankError as exc:
            logger.warning("reranking skipped, keeping the fused order: %s", exc)
            return list(candidates)
        order = sorted(
            range(len(candidates)),
            key=lambda position: (position not in scores, -scores.get(position, 0.0), position),
        )
        return [candidates[position] for position in order]
