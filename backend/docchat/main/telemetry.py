"""Tracing's wiring: the tracer provider the `OTEL_*` settings ask for, the request and database
instrumentations, trace ids in the logs. Off (nothing installed) unless an exporter is set.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat import tracing
from docchat.config import TracingSettings

# Probes and scrapes would be most of the traces and say nothing.
UNTRACED_URLS = "healthz,readyz,metrics"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
TRACED_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s] %(message)s"


def _exporter(settings: TracingSettings) -> SpanExporter | None:
    kind = settings.exporter
    if kind in ("", "none"):
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    if kind == "otlp":
        endpoint = settings.exporter_otlp_traces_endpoint
        if endpoint is None and settings.exporter_otlp_endpoint:
            endpoint = settings.exporter_otlp_endpoint.rstrip("/") + "/v1/traces"
        # Unset, the exporter reads OTEL_EXPORTER_OTLP_* itself (default localhost:4318).
        return OTLPSpanExporter(endpoint=endpoint)
    raise ValueError(f"OTEL_TRACES_EXPORTER={kind!r} is not supported: use otlp, console or none")


def tracer_provider(settings: TracingSettings) -> TracerProvider | None:
    """A provider exporting in batches (off the request path), or None when tracing is off."""
    exporter = _exporter(settings)
    if exporter is None:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def start(provider: TracerProvider, settings: TracingSettings) -> None:
    """docchat's own spans go to `provider`; log lines carry their trace id."""
    tracing.install(
        provider, capture_content=settings.instrumentation_genai_capture_message_content
    )
    formatter = logging.Formatter(TRACED_LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(tracing.TraceIds())
        handler.setFormatter(formatter)


def instrument_app(app: FastAPI, provider: TracerProvider) -> None:
    """One server span per request (route template as its name), the root of its trace;
    without a span per ASGI message (a streamed answer sends hundreds), which cost time on the
    request's path and tell nothing the server span does not."""
    FastAPIInstrumentor.instrument_app(
        app,
        tracer_provider=provider,
        excluded_urls=UNTRACED_URLS,
        exclude_spans=["receive", "send"],
    )


def instrument_engine(engine: AsyncEngine, provider: TracerProvider) -> None:
    """A span per SQL statement (its text, never its parameters). The instrumentation's
    declared range stops below SQLAlchemy 2.1, whose engine events it uses are unchanged (the
    tracing tests check its spans)."""
    SQLAlchemyInstrumentor().instrument(
        engine=engine.sync_engine,
        tracer_provider=provider,
        enable_commenter=False,
        skip_dep_check=True,
    )


def stop(provider: TracerProvider) -> None:
    """Export what is left, then take docchat's spans and the database's off the provider."""
    SQLAlchemyInstrumentor().uninstrument()
    tracing.uninstall()
    provider.shutdown()
    for handler in logging.getLogger().handlers:
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
