"""OpenTelemetry traces exported over OTLP/HTTP as the settings say, to a collector's stand-in
the test starts on loopback (a module of its own: its server installs tracing for the whole
process while it runs)."""

from __future__ import annotations

from typing import Any

import pytest

from docchat.config import Settings, TracingSettings
from tests.api.test_tracing import _upload_and_ask, _working
from tests.support.live_server import serving
from tests.support.llm_server import ScriptedLLM
from tests.support.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.usefixtures("fresh_llm")


async def test_traces_are_exported_over_otlp_http_as_configured(
    settings: Settings, fresh_llm: ScriptedLLM
) -> None:
    with OtlpReceiver() as receiver:
        otel = TracingSettings(  # type: ignore[call-arg]
            _env_file=None, exporter_otlp_endpoint=receiver.url, service_name="docchat-test"
        )
        assert otel.exporter == "otlp"  # an endpoint alone turns tracing on
        with serving(_working(settings, tracing=otel)) as live:
            document_id = await _upload_and_ask(live.url, fresh_llm)
        # Stopping the server flushed its batch of spans to the collector.
        received = receiver.spans()
    names = {span.name for _, _, span in received}
    assert {"POST /api/v1/messages", "retrieval.search"} <= names, names
    # The document was read in a trace of its own: "ingestion.job", or "ingestion.group" when
    # the worker claimed it with another small file still queued in this database (a document
    # an earlier test's server handed back when it stopped).
    assert any(document_id in _ingested(span) for _, _, span in received), names
    assert {service for service, _, _ in received} == {"docchat-test"}


def _ingested(span: Any) -> set[str]:
    """The documents an exported ingestion span read."""
    if span.name not in ("ingestion.job", "ingestion.group"):
        return set()
    found = set()
    for attribute in span.attributes:
        if attribute.key == "docchat.document.id":
            found.add(attribute.value.string_value)
        elif attribute.key == "docchat.document.ids":
            found.update(value.string_value for value in attribute.value.array_value.values)
    return found
