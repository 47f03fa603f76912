"""OpenTelemetry traces (issue 43): one trace per request and per ingestion job, with docchat's
steps and the database inside; no user's words unless asked for; exported over OTLP/HTTP to a
collector (here a receiver on loopback). Against the whole app served by uvicorn."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from docchat import tracing
from docchat.config import Settings, TracingSettings, WorkerSettings
from docchat.llm.client import LLM
from docchat.main.telemetry import StatementsInTraces
from tests.support.chat import ask
from tests.support.live_server import serving
from tests.support.llm_server import ScriptedLLM
from tests.support.users import auth_headers

HANDBOOK = (
    "The Lyra handbook. Deployments happen on Thursdays after the 14:00 review. "
    "Badges are collected at the north lobby desk."
)
QUESTION = "Where are badges collected?"
ANSWER = "At the north lobby desk [1]."

pytestmark = pytest.mark.usefixtures("fresh_llm")


def _working(settings: Settings, **changes: Any) -> Settings:
    worker = WorkerSettings(_env_file=None, enabled=True, poll_seconds=0.2)  # type: ignore[call-arg]
    return settings.model_copy(update={"worker": worker, **changes})


async def _upload_and_ask(url: str, llm: ScriptedLLM) -> str:
    """A user uploads the handbook, waits for it, and asks about it: the document's id."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        headers = await auth_headers(client)
        files = {"file": ("handbook.txt", HANDBOOK.encode(), "text/plain")}
        uploaded = await client.post("/api/v1/documents", headers=headers, files=files)
        assert uploaded.status_code == 202, uploaded.text
        document_id = str(uploaded.json()["id"])
        for _ in range(600):
            document = await client.get(f"/api/v1/documents/{document_id}", headers=headers)
            if document.json()["status"] == "completed":
                break
            await asyncio.sleep(0.1)
        llm.script(ANSWER)
        answered = await ask(client, headers, QUESTION)
        assert answered.status_code == 200, answered.text
        assert answered.json()["assistant_message"]["sources"]
        return document_id


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture(scope="module")
def traced(settings: Settings, exporter: InMemorySpanExporter) -> Iterator[str]:
    provider = TracerProvider(sampler=StatementsInTraces(ALWAYS_ON))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # Every statement gets a span here (OTEL_DOCCHAT_STATEMENT_MIN_MS=0, the SQLAlchemy
    # instrumentation): the default, slow ones only, is test_tracing_options.py's.
    every = settings.tracing.model_copy(update={"docchat_statement_min_ms": 0.0})
    with serving(_working(settings, tracing=every), tracer_provider=provider) as live:
        yield live.url


async def test_a_question_is_one_trace_with_retrieval_the_model_and_the_database(
    traced: str, exporter: InMemorySpanExporter, fresh_llm: ScriptedLLM
) -> None:
    exporter.clear()
    await _upload_and_ask(traced, fresh_llm)
    spans = exporter.get_finished_spans()
    request = next(s for s in spans if s.name == "POST /api/v1/messages" and s.parent is None)
    trace_id = request.context.trace_id
    mine = [s for s in spans if s.context.trace_id == trace_id]
    names = {s.name for s in mine}
    assert {
        "retrieval.search",
        "embedding",
        "retrieval.vector_search",
        "retrieval.bm25",
        "retrieval.fusion",
        "chat scripted-model",
    } <= names, names
    search = next(s for s in mine if s.name == "retrieval.search")
    assert _attributes(search)["docchat.retrieval.passages"] >= 1
    model = next(s for s in mine if s.name == "chat scripted-model")
    attributes = _attributes(model)
    assert attributes["gen_ai.request.model"] == "scripted-model"
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes["gen_ai.usage.output_tokens"] > 0
    # The database's statements are in the request's trace, under its spans.
    statements = [s for s in mine if "db.statement" in _attributes(s)]
    assert statements, names
    assert any("document_chunks" in str(_attributes(s)["db.statement"]) for s in statements)
    # No user's words anywhere: not the question, not the answer, not the document.
    everything = json.dumps([_attributes(s) for s in spans], default=str).lower()
    for words in ("badges", "north lobby", "thursdays"):
        assert words not in everything


async def test_what_people_type_in_a_url_stays_off_the_spans_and_idle_work_makes_no_traces(
    traced: str, exporter: InMemorySpanExporter
) -> None:
    async with httpx.AsyncClient(base_url=traced, timeout=60) as client:
        headers = await auth_headers(client)
        await asyncio.sleep(1.5)  # the worker polls for jobs meanwhile (every 0.2 s here)
        exporter.clear()
        found = await client.get("/api/v1/chats", headers=headers, params={"q": "swordfish"})
        assert found.status_code == 200
        await client.get("/readyz")
        await asyncio.sleep(1.0)
    spans = exporter.get_finished_spans()
    everything = json.dumps([_attributes(s) for s in spans], default=str)
    assert "swordfish" not in everything
    search = next(s for s in spans if s.name == "GET /api/v1/chats" and s.parent is None)
    assert any(str(value).endswith("?q") for value in _attributes(search).values())
    # Roots are requests and ingestion only: no trace of a lone statement (the worker's polls,
    # the probe's database check) and none for the probe itself. (Documents another test left
    # queued may be read meanwhile, one by one or as a group of small files: that is work, not
    # idling; on a slow machine CI saw a group.)
    roots = {s.name for s in spans if s.parent is None} - {"ingestion.job", "ingestion.group"}
    assert roots == {"GET /api/v1/chats"}, roots


async def test_an_ingestion_job_is_a_trace_of_its_own_with_its_phases(
    traced: str, exporter: InMemorySpanExporter, fresh_llm: ScriptedLLM
) -> None:
    exporter.clear()
    document_id = await _upload_and_ask(traced, fresh_llm)
    spans = exporter.get_finished_spans()
    job = next(
        s
        for s in spans
        if s.name == "ingestion.job" and _attributes(s)["docchat.document.id"] == document_id
    )
    assert job.parent is None and _attributes(job)["docchat.job.outcome"] == "completed"
    phases = [s for s in spans if s.context.trace_id == job.context.trace_id and s is not job]
    names = {s.name for s in phases}
    assert {"ingestion.read", "ingestion.lexical", "embedding", "ingestion.vector_write"} <= names
    read = next(s for s in phases if s.name == "ingestion.read")
    assert _attributes(read)["docchat.chunks"] == 1
    assert any("db.statement" in _attributes(s) for s in phases)


async def test_prompts_reach_a_span_only_when_asked_for(
    settings: Settings, fresh_llm: ScriptedLLM
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    llm = LLM(settings.llm)
    messages = [{"role": "user", "content": "What is the secret word?"}]
    before = tracing.installed()
    try:
        for capture in (False, True):
            tracing.install(provider, capture_content=capture)
            fresh_llm.script("Swordfish.", "Swordfish.")
            await llm.complete(messages)
            pieces = [piece async for piece in llm.stream(messages)]
            assert "".join(p for p in pieces if isinstance(p, str)) == "Swordfish."
    finally:
        tracing.restore(before)
        await llm.close()
    # Tracing is installed for the whole process: a worker of another test's app reading a
    # document meanwhile adds its ingestion spans (seen in CI on a slow machine).
    spans = [s for s in exporter.get_finished_spans() if not s.name.startswith("ingestion")]
    spans = [s for s in spans if s.name != "embedding" and "db.statement" not in _attributes(s)]
    assert [s.name for s in spans] == ["chat scripted-model"] * 4
    plain, captured = spans[:2], spans[2:]
    assert all("gen_ai.prompt" not in _attributes(s) for s in plain)
    assert all("secret word" in _attributes(s)["gen_ai.prompt"] for s in captured)
    assert all(_attributes(s)["gen_ai.completion"] == "Swordfish." for s in captured)


def test_log_lines_carry_the_trace_id() -> None:
    before = tracing.install(TracerProvider())
    record = logging.LogRecord("docchat", logging.INFO, __file__, 1, "hello", None, None)
    try:
        with tracing.span("step") as span:
            tracing.TraceIds().filter(record)
    finally:
        tracing.restore(before)
    assert record.trace_id == format(span.get_span_context().trace_id, "032x")
    outside = logging.LogRecord("docchat", logging.INFO, __file__, 1, "hello", None, None)
    tracing.TraceIds().filter(outside)
    assert outside.trace_id == "-"


def test_tracing_is_off_by_default_and_an_unknown_exporter_is_refused() -> None:
    from docchat.main import telemetry

    assert telemetry.tracer_provider(TracingSettings(_env_file=None)) is None  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="use otlp, console or none"):
        telemetry.tracer_provider(TracingSettings(_env_file=None, traces_exporter="jaeger"))  # type: ignore[call-arg]
