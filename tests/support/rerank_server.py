"""A real rerank HTTP server (`POST /v1/rerank`, the Cohere/Jina/vLLM request shape) that tests
start on loopback and script: it scores each passage by how often it contains the words it was
told to favour, records every request, and can be told to fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.llm_server import LoopbackServer, free_port


@dataclass
class RerankServer:
    favoured: list[str] = field(default_factory=list)
    # "ok", "error" (HTTP 500) or "nonsense" (a result pointing at no passage).
    behaviour: str = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    _server: LoopbackServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/rerank"

    def reset(self) -> None:
        self.favoured, self.behaviour = [], "ok"
        self.requests.clear()
        self.authorizations.clear()

    async def _rerank(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("authorization"))
        if self.behaviour == "error":
            return JSONResponse({"error": "model not loaded"}, status_code=500)
        passages = body.get("documents", body.get("texts")) or []
        if self.behaviour == "nonsense":
            return JSONResponse({"results": [{"index": len(passages), "relevance_score": 1}]})
        scored = [
            {"index": i, "relevance_score": sum(p.lower().count(w) for w in self.favoured)}
            for i, p in enumerate(passages)
        ]
        scored.sort(key=lambda item: -item["relevance_score"])
        return JSONResponse({"model": body.get("model", ""), "results": scored})

    def start(self) -> RerankServer:
        app = Starlette(routes=[Route("/v1/rerank", self._rerank, methods=["POST"])])
        self._server = LoopbackServer(app, self.port, "the rerank server")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
