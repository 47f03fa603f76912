from __future__ import annotations

import dataclasses
import re
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from docchat.config import LLMSettings
from docchat.llm.client import LLM
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.documents import upload_and_process
from tests.support.users import auth_headers


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


async def test_metrics_count_routes_ingestion_retrieval_and_llm(
    client: httpx.AsyncClient, components: Components
) -> None:
    before = (await client.get("/metrics")).text
    headers = await auth_headers(client)
    await upload_and_process(client, components, headers, "a.md", b"The harbour opens at dawn.")
    chat_id = (await ask(client, headers, "When does the harbour open?")).json()["chat_id"]
    await client.get(f"/api/v1/chats/{chat_id}", headers=headers)
    response = await client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text

    requests = samples(text, "docchat_http_requests_total")
    # Routes are counted by template, not by id.
    key = (("method", "GET"), ("route", "/api/v1/chats/{chat_id}"), ("status", "200"))
    assert requests.get(key, 0) >= 1, sorted(requests)[:20]
    assert not any(chat_id in str(labels) for labels in requests)

    def delta(name: str, labels: tuple[tuple[str, str], ...] = ()) -> float:
        return samples(text, name).get(labels, 0) - samples(before, name).get(labels, 0)

    assert delta("docchat_ingestion_jobs_total", (("outcome", "completed"),)) == 1
    assert delta("docchat_retrieval_duration_seconds_count") >= 1
    # POST /messages reads the model's answer as a stream too (readable while it is written).
    assert delta("docchat_llm_duration_seconds_count", (("mode", "stream"),)) == 1
    assert delta("docchat_llm_tokens_total", (("kind", "completion"),)) > 0
    assert re.search(r"docchat_http_request_duration_seconds_bucket\{", text)


async def test_readyz_reports_an_unreachable_llm(
    client: httpx.AsyncClient, components: Components, app: Any
) -> None:
    ready = (await client.get("/readyz")).json()
    assert ready["checks"]["llm"]["ok"] is True
    dead = LLM(LLMSettings(_env_file=None, base_url="http://127.0.0.1:9/v1", max_retries=0))  # type: ignore[call-arg]
    attach_components(app, dataclasses.replace(components, llm=dead))

    response = await client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["checks"]["llm"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True
    await dead.close()
