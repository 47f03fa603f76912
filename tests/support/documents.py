from __future__ import annotations

import uuid
from typing import Any

import httpx

from docchat.ingestion.worker import IngestionWorker
from docchat.main.components import Components
from docchat.retrieval.index import DocumentRef


async def upload(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    name: str,
    content: bytes,
    *,
    url: str = "/api/v1/documents",
    data: dict[str, str] | None = None,
    content_type: str = "application/octet-stream",
) -> httpx.Response:
    return await client.post(
        url, headers=headers, files={"file": (name, content, content_type)}, data=data or {}
    )


async def upload_and_process(
    client: httpx.AsyncClient,
    components: Components,
    headers: dict[str, str],
    name: str,
    content: bytes,
    **kwargs: Any,
) -> dict[str, Any]:
    """Upload, run the worker until idle, and return the document as the API shows it."""
    response = await upload(client, headers, name, content, **kwargs)
    assert response.status_code == 202, response.text
    await IngestionWorker(components).run_until_idle()
    document = await client.get(f"/api/v1/documents/{response.json()['id']}", headers=headers)
    assert document.status_code == 200
    body: dict[str, Any] = document.json()
    return body


def vector_ref(document: dict[str, Any]) -> DocumentRef:
    """How the vector store addresses a document the API returned."""
    return DocumentRef(uuid.UUID(document["id"]), uuid.UUID(document["owner_id"]))
