"""Prometheus metrics: HTTP traffic per route, ingestion jobs, retrieval and LLM latency, tokens."""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from starlette.types import Message, Receive, Scope, Send

from docchat.kit.asgi import HTTPMiddleware

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

HTTP_REQUESTS = Counter(
    "docchat_http_requests_total", "HTTP requests handled", ["method", "route", "status"]
)
HTTP_LATENCY = Histogram(
    "docchat_http_request_duration_seconds",
    "Time to the response head",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
INGESTION_JOBS = Counter(
    "docchat_ingestion_jobs_total", "Ingestion jobs finished, by outcome", ["outcome"]
)
INGESTION_DURATION = Histogram(
    "docchat_ingestion_duration_seconds",
    "Time to process one document",
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)
RETRIEVAL_LATENCY = Histogram(
    "docchat_retrieval_duration_seconds",
    "Query embedding and vector search",
    buckets=LATENCY_BUCKETS,
)
LLM_LATENCY = Histogram(
    "docchat_llm_duration_seconds", "LLM calls, whole answer", ["mode"], buckets=LATENCY_BUCKETS
)
LLM_TOKENS = Counter("docchat_llm_tokens_total", "Tokens reported by the LLM", ["kind"])
# With read replicas configured: where each question's reads went, and why the primary.
QUESTION_READS = Counter(
    "docchat_question_reads_total",
    "Questions by where their reads ran: replica, or primary because replicas were down, "
    "behind the question's start, or failed during it",
    ["target", "reason"],
)


def record_tokens(prompt: int | None, completion: int | None) -> None:
    if prompt:
        LLM_TOKENS.labels("prompt").inc(prompt)
    if completion:
        LLM_TOKENS.labels("completion").inc(completion)


def route_template(scope: MutableMapping[str, Any]) -> str:
    """The matched route as a template with its full prefix: `/api/v1/chats/{chat_id}`.

    Labels must not carry ids (unbounded cardinality). A router's route only knows the path
    below its prefix, so the prefix is read off the request path.
    """
    route = scope.get("route")
    template = getattr(route, "path", None)
    if template is None:
        return "unmatched"
    try:
        rendered = template.format(**scope.get("path_params", {}))
    except (KeyError, IndexError, ValueError):
        return str(template)
    path = str(scope.get("path", ""))
    prefix = path[: len(path) - len(rendered)] if rendered and path.endswith(rendered) else ""
    return prefix + str(template)


class MetricsMiddleware(HTTPMiddleware):
    """Request count and latency (to the last byte, streams included) per route."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def send_recording_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording_status)
        finally:
            route = route_template(scope)
            method = str(scope.get("method", ""))
            HTTP_LATENCY.labels(method, route).observe(time.perf_counter() - started)
            HTTP_REQUESTS.labels(method, route, str(status)).inc()


def install(app: FastAPI) -> None:
    app.add_middleware(MetricsMiddleware)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
