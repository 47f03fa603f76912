"""Tracing's options: the standard OTEL_PYTHON_DISABLED_INSTRUMENTATIONS (in a module of its
own: the other tracing tests' server instruments the database process-wide while it runs)."""

from __future__ import annotations

from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import TracerProvider
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
