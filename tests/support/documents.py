from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.db import create_sessionmaker
from docchat.documents.models import Document, IngestionJob
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


async def document_and_job(
    engine: AsyncEngine, document_id: uuid.UUID
) -> tuple[Document, IngestionJob]:
    """The document and its job as the database has them now (for tests of real processes)."""
    async with create_sessionmaker(engine)() as session:
        document = (
            await session.execute(select(Document).where(Document.id == document_id))
        ).scalar_one()
        job = (
            await session.execute(
                select(IngestionJob).where(IngestionJob.document_id == document_id)
            )
        ).scalar_one()
        return document, job


async def wait_for_document(
    engine: AsyncEngine, document_id: uuid.UUID, done: Callable[[Document], bool], seconds: float
) -> Document:
    """The document once `done` says so; an AssertionError naming its state after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        document, _ = await document_and_job(engine, document_id)
        if done(document):
            return document
        if time.monotonic() > deadline:
            raise AssertionError(
                f"document never reached the expected state: {document.status}, "
                f"{document.chunks_done} chunks done"
            )
        await asyncio.sleep(0.1)
