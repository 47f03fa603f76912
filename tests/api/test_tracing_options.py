"""Tracing's options: the standard OTEL_PYTHON_DISABLED_INSTRUMENTATIONS and the threshold of a
statement's span (in a module of its own: the other tracing tests' server instruments the
database process-wide while it runs)."""

from __future__ import annotations

from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat import tracing
from docchat.config import TracingSettings
from docchat.main.telemetry import Telemetry


async def test_statement_spans_can_be_left_out(engine: AsyncEngine) -> None:
    """OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=sqlalchemy: no span per SQL statement (most of
    tracing's cost, docs/performance.md#traces); docchat's own spans stay."""
    settings = TracingSettings(_env_file=None, python_disabled_instrumentations="sqlalchemy")  # type: ignore[call-arg]
    assert not settings.instruments("sqlalchemy") and settings.instruments("fastapi")
    traces = Telemetry(TracerProvider(), settings)
    traces.start()
    try:
        traces.instrument_engine(engine)
        assert not SQLAlchemyInstrumentor().is_instrumented_by_opentelemetry
        assert tracing.enabled()
    finally:
        traces.stop()


async def test_by_default_only_slow_statements_get_a_span(engine: AsyncEngine) -> None:
    """OTEL_DOCCHAT_STATEMENT_MIN_MS (5 by default): a statement that took longer is in the
    trace with its text; the many fast ones cost no span; none outside a trace. The test sets
    250 ms: on a busy CI machine even `SELECT 1` has taken more than 5."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert TracingSettings(_env_file=None).docchat_statement_min_ms == 5.0  # type: ignore[call-arg]
    settings = TracingSettings(_env_file=None, docchat_statement_min_ms=250)  # type: ignore[call-arg]
    traces = Telemetry(provider, settings)
    traces.start()
    try:
        traces.instrument_engine(engine)
        assert not SQLAlchemyInstrumentor().is_instrumented_by_opentelemetry
        tracer = provider.get_tracer("test")
        async with engine.connect() as connection:
            with tracer.start_as_current_span("request") as request:
                await connection.execute(text("SELECT 1"))
                await connection.execute(text("SELECT pg_sleep(0.3)"))
            await connection.execute(text("SELECT pg_sleep(0.3) AS outside"))
    finally:
        traces.stop()
    spans = exporter.get_finished_spans()
    statements = [s for s in spans if s.name != "request"]
    assert [(s.name, dict(s.attributes or {})["db.statement"]) for s in statements] == [
        ("SELECT", "SELECT pg_sleep(0.3)")
    ]
    (slow,) = statements
    assert slow.parent is not None and slow.parent.span_id == request.get_span_context().span_id
    assert slow.end_time is not None and slow.start_time is not None
    assert slow.end_time - slow.start_time >= 300_000_000
