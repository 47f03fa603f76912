from __future__ import annotations

import httpx


async def test_healthz(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}


async def test_readyz_reports_each_dependency(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["vector_store"]["ok"] is True
    assert body["checks"]["embedder"]["model"] == "all-MiniLM-L6-v2"


async def test_unknown_route_is_json_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_openapi_lists_the_api(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "/api/v1/auth/login" in schema["paths"]
    assert "/api/v1/documents" in schema["paths"]
