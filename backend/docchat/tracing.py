"""OpenTelemetry spans for the steps that take time: retrieval's parts, the model, ingestion.

Off by default: until the wiring installs a tracer provider (`install`, from the `OTEL_*`
settings), `span` does nothing and costs a function call. The request's span and the
database's come from the FastAPI and SQLAlchemy instrumentations the wiring adds; this module
names docchat's own steps inside them. Text a user wrote (questions, prompts, answers) is put
on a span only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

_tracer: Tracer | None = None
_capture_content = False


@dataclass(frozen=True)
class Installed:
    """What `span` uses: a tracer (None: off) and whether text may go on spans."""

    tracer: Tracer | None
    capture_content: bool


def installed() -> Installed:
    return Installed(_tracer, _capture_content)


def install(provider: trace.TracerProvider, *, capture_content: bool = False) -> Installed:
    """docchat's spans go to `provider` from now on; returns what was installed before."""
    previous = installed()
    restore(Installed(provider.get_tracer("docchat"), capture_content))
    return previous


def restore(state: Installed) -> None:
    global _tracer, _capture_content
    _tracer, _capture_content = state.tracer, state.capture_content


def uninstall() -> None:
    restore(Installed(None, False))


def enabled() -> bool:
    return _tracer is not None


def captures_content() -> bool:
    return _tracer is not None and _capture_content


Attributes = Mapping[str, AttributeValue | None]


def _kept(attributes: Attributes | None) -> dict[str, AttributeValue]:
    return {key: value for key, value in (attributes or {}).items() if value is not None}


@contextlib.contextmanager
def span(name: str, attributes: Attributes | None = None, *, root: bool = False) -> Iterator[Span]:
    """A span for the block, the current span's child (`root`: a trace of its own); None
    attributes are left out; an exception leaving the block is recorded on it."""
    if _tracer is None:
        yield INVALID_SPAN
        return
    parent = otel_context.Context() if root else None
    with _tracer.start_as_current_span(name, context=parent, attributes=_kept(attributes)) as it:
        yield it


def start_span(name: str, attributes: Attributes | None = None) -> Span:
    """A span that is not made current, for a generator to end itself (`end`): a generator
    that made its span current would leave it current in its reader between two items."""
    if _tracer is None:
        return INVALID_SPAN
    return _tracer.start_span(name, attributes=_kept(attributes))


def record_error(current: Span, error: BaseException) -> None:
    """The step failed (and was handled: the exception does not leave the span's block)."""
    if current.is_recording():
        current.record_exception(error)
        current.set_status(Status(StatusCode.ERROR, type(error).__name__))


def end(current: Span, error: BaseException | None = None) -> None:
    if error is not None:
        record_error(current, error)
    current.end()


def set_attributes(current: Span, attributes: Attributes) -> None:
    if current.is_recording():
        current.set_attributes(_kept(attributes))


class TraceIds(logging.Filter):
    """Adds `trace_id` and `span_id` (hex, or "-" outside a span) to every log record, so a
    log line can be found from its trace and the other way round."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        record.trace_id = format(context.trace_id, "032x") if context.is_valid else "-"
        record.span_id = format(context.span_id, "016x") if context.is_valid else "-"
        return True
