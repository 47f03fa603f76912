"""Files built to hurt a parser end as failed documents with a reason, never a crash."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest

from docchat.main.components import Components
from docchat.retrieval.index import VectorStoreUnavailable
from tests.support.documents import upload_and_process
from tests.support.files import deeply_nested_pdf, page_count_bomb_pdf
from tests.support.users import auth_headers


@pytest.mark.parametrize(
    ("name", "make", "fragment"),
    [
        ("nested.pdf", lambda: deeply_nested_pdf(3000), "PDF"),
        ("many-pages.pdf", lambda: page_count_bomb_pdf(6000), "limit is 5000"),
    ],
)
async def test_pdf_bombs_fail_cleanly(
    client: httpx.AsyncClient, components: Components, name: str, make: Any, fragment: str
) -> None:
    headers = await auth_headers(client)
    document = await upload_and_process(client, components, headers, name, make())
    assert document["status"] == "failed", document
    assert fragment in document["error"]
    # The service is still fine afterwards.
    assert (await client.get("/healthz")).status_code == 200


async def test_a_message_of_a_megabyte_is_refused_before_any_work(
    client: httpx.AsyncClient,
) -> None:
    headers = await auth_headers(client)
    response = await client.post(
        "/api/v1/messages", headers=headers, json={"content": "x" * 1_000_000}
    )
    assert response.status_code == 422
    assert "too long" in response.json()["detail"]
    assert (await client.get("/api/v1/chats", headers=headers)).json()["total"] == 0


async def test_readyz_reports_a_broken_vector_store(
    client: httpx.AsyncClient, components: Components, app: Any
) -> None:
    class Broken:
        def ping(self) -> None:
            raise VectorStoreUnavailable("the index folder is unreadable")

    from docchat.main.app import attach_components

    attach_components(app, dataclasses.replace(components, vector_store=Broken()))  # type: ignore[arg-type]
    response = await client.get("/readyz")
    assert response.status_code == 503
    check = response.json()["checks"]["vector_store"]
    assert check == {"ok": False, "error": "the index folder is unreadable"}
