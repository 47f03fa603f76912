"""Tracing's wiring: the tracer provider the `OTEL_*` settings ask for, the request and database
instrumentations, trace ids in the logs. Off (nothing installed) unless an exporter is set.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from fastapi import FastAPI
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    Decision,
    Sampler,
    SamplingResult,
    _get_from_env_or_default,
)
from opentelemetry.trace import Link, Span, SpanKind, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes
from sqlalchemy import Engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat import tracing
from docchat.config import TracingSettings

# Probes and scrapes would be most of the traces and say nothing (paths, anchored).
UNTRACED_URLS = "://[^/]+/healthz$,://[^/]+/readyz$,://[^/]+/metrics$"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
TRACED_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s] %(message)s"


def configure_logging(level: str) -> None:
    """The process's logs: one plain line a record on stderr, at `LOG_LEVEL` (a no-op where
    the root logger already has a handler, as under pytest)."""
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT)


# Where a request's URL is kept on its span; the query string holds what people typed
# (`?q=` of a chat search, an e-mail address in the users' list), so only its keys stay.
URL_ATTRIBUTES = ("http.url", "url.full", "http.target")


class StatementsInTraces(Sampler):
    """The configured sampler (`OTEL_TRACES_SAMPLER`), for everything but a database call
    outside any trace (a worker's idle poll, a probe's check, a start-up query): a trace of
    one statement every second says nothing and costs the collector."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        orphan = not get_current_span(parent_context).get_span_context().is_valid
        if orphan and kind is SpanKind.CLIENT:
            return SamplingResult(Decision.DROP)
        return self.sampler.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )

    def get_description(self) -> str:
        return f"StatementsInTraces{{{self.sampler.get_description()}}}"


def _exporter(kind: str, settings: TracingSettings) -> SpanExporter:
    if kind == "console":
        return ConsoleSpanExporter()
    if kind == "otlp":
        endpoint = settings.exporter_otlp_traces_endpoint or None
        if endpoint is None and settings.exporter_otlp_endpoint:
            endpoint = settings.exporter_otlp_endpoint.rstrip("/") + "/v1/traces"
        # Unset, the exporter reads OTEL_EXPORTER_OTLP_* itself (default localhost:4318).
        return OTLPSpanExporter(endpoint=endpoint)
    raise ValueError(f"OTEL_TRACES_EXPORTER={kind!r} is not supported: use otlp, console or none")


def _resource(settings: TracingSettings) -> Resource:
    """`OTEL_SERVICE_NAME` (docchat by default) unless only `OTEL_RESOURCE_ATTRIBUTES` names
    the service; the SDK adds the rest of those attributes."""
    named_elsewhere = "service.name=" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if named_elsewhere and "service_name" not in settings.model_fields_set:
        return Resource.create()
    return Resource.create({"service.name": settings.service_name})


def tracer_provider(settings: TracingSettings) -> TracerProvider | None:
    """A provider exporting in batches (off the request path), or None when tracing is off."""
    kinds = [kind.strip() for kind in settings.exporter.split(",") if kind.strip()]
    kinds = [kind for kind in kinds if kind != "none"]
    if settings.sdk_disabled or not kinds:
        return None
    exporters = [_exporter(kind, settings) for kind in kinds]
    provider = TracerProvider(
        resource=_resource(settings), sampler=StatementsInTraces(_get_from_env_or_default())
    )
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _query_keys_only(span: Span, scope: dict[str, Any]) -> None:
    """The request's URL on its span without the query's values."""
    recorded = getattr(span, "attributes", None) or {}
    for key in URL_ATTRIBUTES:
        value = recorded.get(key)
        if isinstance(value, str) and "?" in value:
            parts = urlsplit(value)
            names = "&".join(name for name, _ in parse_qsl(parts.query, keep_blank_values=True))
            span.set_attribute(key, urlunsplit(parts._replace(query=names)))
    if "url.query" in recorded:
        query = scope.get("query_string", b"").decode("latin-1")
        span.set_attribute("url.query", "&".join(n for n, _ in parse_qsl(query)))


class SlowStatements:
    """A span for each SQL statement that took at least `min_ms`, made once it has run: the
    dozens of fast statements of a request cost a clock reading each instead of a span each
    (a span per statement was most of tracing's cost under load). Inside a trace only, named
    and described as the SQLAlchemy instrumentation's are (`SELECT`, `db.statement`)."""

    def __init__(self, provider: TracerProvider, min_ms: float) -> None:
        self.tracer = provider.get_tracer("docchat.database")
        self.min_ns = int(min_ms * 1_000_000)
        self._engine: Engine | None = None

    def attach(self, engine: Engine) -> None:
        self._engine = engine
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def detach(self) -> None:
        if self._engine is not None:
            event.remove(self._engine, "before_cursor_execute", self._before)
            event.remove(self._engine, "after_cursor_execute", self._after)
            self._engine = None

    def _before(
        self, _conn: Any, _cursor: Any, _sql: str, _params: Any, context: Any, _many: bool
    ) -> None:
        if context is not None:
            context._docchat_started_ns = time.time_ns()

    def _after(
        self, _conn: Any, _cursor: Any, sql: str, _params: Any, context: Any, _many: bool
    ) -> None:
        started = getattr(context, "_docchat_started_ns", None)
        if started is None:
            return
        ended = time.time_ns()
        if ended - started < self.min_ns or not get_current_span().get_span_context().is_valid:
            return
        words = sql.lstrip().split(maxsplit=1)
        span = self.tracer.start_span(
            words[0].upper() if words else "SQL",
            kind=SpanKind.CLIENT,
            start_time=started,
            attributes={"db.system": "postgresql", "db.statement": sql},
        )
        span.end(end_time=ended)


class Telemetry:
    """Tracing for one process: started once its parts exist, stopped when it ends (the SDK's
    instrumentations and docchat's spans are process-wide: one per process)."""

    def __init__(self, provider: TracerProvider, settings: TracingSettings) -> None:
        self.provider = provider
        self.settings = settings
        self._previous = tracing.installed()
        self._handlers: list[tuple[logging.Handler, logging.Formatter | None]] = []
        self._filter = tracing.TraceIds()
        self._engine = False
        self._slow: SlowStatements | None = None

    def start(self) -> None:
        """docchat's own spans go to the provider; log lines carry their trace id."""
        self._previous = tracing.install(
            self.provider,
            capture_content=self.settings.instrumentation_genai_capture_message_content,
        )
        formatter = logging.Formatter(TRACED_LOG_FORMAT)
        for handler in logging.getLogger().handlers:
            self._handlers.append((handler, handler.formatter))
            handler.addFilter(self._filter)
            handler.setFormatter(formatter)

    def instrument_engine(self, engine: AsyncEngine) -> None:
        """Spans for SQL statements (their text, never their parameters): those that took at
        least `OTEL_DOCCHAT_STATEMENT_MIN_MS` (`SlowStatements`), or every one with the
        SQLAlchemy instrumentation when that is 0. The instrumentation's declared range stops
        below SQLAlchemy 2.1, whose engine events it uses are unchanged (the tracing tests
        check its spans)."""
        if not self.settings.instruments("sqlalchemy"):
            return
        if self.settings.docchat_statement_min_ms > 0:
            if self._slow is None:  # one per process, as the instrumentation
                self._slow = SlowStatements(self.provider, self.settings.docchat_statement_min_ms)
                self._slow.attach(engine.sync_engine)
            return
        instrumentor = SQLAlchemyInstrumentor()
        if instrumentor.is_instrumented_by_opentelemetry:
            return  # another app of this process has it (tests); the first one's engine only
        instrumentor.instrument(
            engine=engine.sync_engine,
            tracer_provider=self.provider,
            enable_commenter=False,
            skip_dep_check=True,
        )
        self._engine = True

    def stop(self) -> None:
        """Export what is left; put back what `start` changed."""
        if self._engine:
            SQLAlchemyInstrumentor().uninstrument()
        if self._slow is not None:
            self._slow.detach()
            self._slow = None
        tracing.restore(self._previous)
        for handler, formatter in self._handlers:
            handler.removeFilter(self._filter)
            handler.setFormatter(formatter)
        self.provider.shutdown()


def instrument_app(app: FastAPI, provider: TracerProvider) -> None:
    """One server span per request (route template as its name), the root of its trace;
    without a span per ASGI message (a streamed answer sends hundreds), which cost time on the
    request's path and tell nothing the server span does not."""
    FastAPIInstrumentor.instrument_app(
        app,
        tracer_provider=provider,
        excluded_urls=UNTRACED_URLS,
        exclude_spans=["receive", "send"],
        server_request_hook=_query_keys_only,
    )
