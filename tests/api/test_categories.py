from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.support.users import auth_headers


async def test_category_crud_and_owner_scope(client: httpx.AsyncClient) -> None:
    alice = await auth_headers(client)
    bob = await auth_headers(client)
    created = await client.post("/api/v1/categories", headers=alice, json={"name": "  Papers "})
    assert created.status_code == 201
    category = created.json()
    assert category["name"] == "Papers"

    duplicate = await client.post("/api/v1/categories", headers=alice, json={"name": "Papers"})
    assert duplicate.status_code == 409
    # Names are per owner: Bob may use the same one.
    assert (
        await client.post("/api/v1/categories", headers=bob, json={"name": "Papers"})
    ).status_code == 201

    url = f"/api/v1/categories/{category['id']}"
    assert (await client.get(url, headers=bob)).status_code == 404
    assert (await client.patch(url, headers=bob, json={"name": "x"})).status_code == 404
    assert (await client.delete(url, headers=bob)).status_code == 404

    renamed = await client.patch(url, headers=alice, json={"name": "Reports"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Reports"
    assert (await client.delete(url, headers=alice)).status_code == 204
    assert (await client.get(url, headers=alice)).status_code == 404


async def test_blank_name_is_422(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    assert (
        await client.post("/api/v1/categories", headers=headers, json={"name": "   "})
    ).status_code == 422


async def test_pagination(client: httpx.AsyncClient) -> None:
    headers = await auth_headers(client)
    for index in range(5):
        await client.post("/api/v1/categories", headers=headers, json={"name": f"c{index}"})
    page = (await client.get("/api/v1/categories?skip=1&limit=2", headers=headers)).json()
    assert page["total"] == 5 and page["skip"] == 1 and page["limit"] == 2
    assert [item["name"] for item in page["items"]] == ["c1", "c2"]
    beyond = (await client.get("/api/v1/categories?skip=10", headers=headers)).json()
    assert beyond["items"] == [] and beyond["total"] == 5


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "skip=-1", "limit=abc"])
async def test_pagination_bounds_are_422(client: httpx.AsyncClient, query: str) -> None:
    headers = await auth_headers(client)
    assert (await client.get(f"/api/v1/categories?{query}", headers=headers)).status_code == 422


async def test_creating_one_name_ten_times_at_once_gives_one_category_and_nine_409s(
    live_client: httpx.AsyncClient,
) -> None:
    headers = await auth_headers(live_client)
    responses = await asyncio.gather(
        *(
            live_client.post("/api/v1/categories", headers=headers, json={"name": "Invoices"})
            for _ in range(10)
        )
    )
    assert sorted(response.status_code for response in responses) == [201] + [409] * 9
    listed = (await live_client.get("/api/v1/categories", headers=headers)).json()
    assert [category["name"] for category in listed["items"]] == ["Invoices"]
