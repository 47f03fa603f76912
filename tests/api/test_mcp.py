"""The MCP server at /mcp, driven by the official `mcp` SDK over streamable HTTP against the
whole app on loopback (worker included): tools, key scopes, isolation, revocation at the next
call, quotas and the record of each answer."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.config import Settings, WorkerSettings
from docchat.db import create_sessionmaker
from docchat.events.models import Event
from docchat.quotas.models import TokenHold
from docchat.users import service as users_service
from docchat.users.models import Role
from tests.support.live_server import LiveServer, serving
from tests.support.llm_server import ScriptedLLM
from tests.support.users import PASSWORD, auth_headers, login, unique_email

HANDBOOK = (
    "The Orion team handbook.\n\nReleases. Deployments happen on Thursdays after the 14:00 "
    "review, never on Fridays. The on-call engineer approves each deployment.\n\nTravel. "
    "Train tickets are booked through the Meridian portal."
)
BOILER = "Facilities. The Vantor boiler in the basement is serviced each autumn by Kessler Heating."
MARKER = "14:00 review"
QUESTION = "When do deployments happen?"
VERSION = importlib.metadata.version("docchat")

pytestmark = pytest.mark.usefixtures("fresh_llm")


@pytest.fixture(scope="module")
def server(settings: Settings) -> Iterator[LiveServer]:
    worker = WorkerSettings(_env_file=None, enabled=True, poll_seconds=0.2)  # type: ignore[call-arg]
    with serving(settings.model_copy(update={"worker": worker})) as live:
        yield live


@pytest.fixture
async def http(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        yield client


@contextlib.asynccontextmanager
async def mcp_client(server: LiveServer, key: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as transport_client,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=transport_client)) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refusal(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return " ".join(getattr(part, "text", "") for part in result.content)


async def new_key(http: httpx.AsyncClient, headers: dict[str, str], *scopes: str) -> str:
    created = await http.post(
        "/api/v1/api-keys", headers=headers, json={"name": "agent", "scopes": list(scopes)}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["secret"])


async def processed(http: httpx.AsyncClient, headers: dict[str, str], name: str, text: str) -> str:
    uploaded = await http.post(
        "/api/v1/documents", headers=headers, files={"file": (name, text.encode(), "text/plain")}
    )
    assert uploaded.status_code == 202, uploaded.text
    document_id = str(uploaded.json()["id"])
    for _ in range(600):
        document = (await http.get(f"/api/v1/documents/{document_id}", headers=headers)).json()
        if document["status"] == "completed":
            return document_id
        assert document["status"] in ("queued", "processing"), document
        await asyncio.sleep(0.1)
    raise AssertionError("the document was never processed")


async def shared_handbook(
    http: httpx.AsyncClient, owner: dict[str, str], reader: dict[str, str]
) -> tuple[str, str]:
    """The owner's handbook in a collection the reader was invited to and joined."""
    document_id = await processed(http, owner, "handbook.txt", HANDBOOK)
    collection = (
        await http.post("/api/v1/collections", headers=owner, json={"name": "Orion"})
    ).json()["id"]
    added = await http.put(
        f"/api/v1/collections/{collection}/documents/{document_id}", headers=owner
    )
    assert added.status_code == 204, added.text
    email = (await http.get("/api/v1/users/me", headers=reader)).json()["email"]
    invited = await http.post(
        f"/api/v1/collections/{collection}/members", headers=owner, json={"email": email}
    )
    assert invited.status_code == 201, invited.text
    accepted = await http.post(
        f"/api/v1/collections/{collection}/invitation/accept", headers=reader
    )
    assert accepted.status_code == 200, accepted.text
    return collection, document_id


async def test_a_reader_searches_lists_and_loses_a_revoked_share_at_the_next_call(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    alice, bob, carol = [await auth_headers(http) for _ in range(3)]
    collection, document_id = await shared_handbook(http, alice, bob)
    await processed(http, carol, "carol.txt", "Carol's garden notes: tomatoes need sun.")

    async with mcp_client(server, await new_key(http, bob, "read")) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {"search_documents", "ask", "list_collections", "list_documents"}

        found = await call(client, "search_documents", query=QUESTION)
        first = found["passages"][0]
        assert first["source"]["document_id"] == document_id
        assert first["source"]["document_name"] == "handbook.txt"
        assert MARKER in first["source"]["highlight"]["text"]
        assert MARKER in first["text"]
        # Carol's document is not Bob's to read: never a passage of it.
        assert all(p["source"]["document_name"] != "carol.txt" for p in found["passages"])

        narrowed = await call(
            client, "search_documents", query=QUESTION, collection_ids=[collection], top_k=1
        )
        assert [p["source"]["document_id"] for p in narrowed["passages"]] == [document_id]

        collections = await call(client, "list_collections")
        orion = next(item for item in collections["items"] if item["id"] == collection)
        assert orion["role"] == "viewer" and orion["document_count"] == 1
        listed = await call(client, "list_documents", collection_id=collection)
        assert [item["filename"] for item in listed["items"]] == ["handbook.txt"]
        by_name = await call(client, "list_documents", name="HANDBOOK")
        assert [item["id"] for item in by_name["items"]] == [document_id]

        # Alice removes Bob: the very next call no longer reaches her handbook.
        members = await http.get(f"/api/v1/collections/{collection}/members", headers=alice)
        viewer = next(m for m in members.json() if m["role"] == "viewer")
        removed = await http.delete(
            f"/api/v1/collections/{collection}/members/{viewer['id']}", headers=alice
        )
        assert removed.status_code == 204
        after = await call(client, "search_documents", query=QUESTION)
        assert all(p["source"]["document_id"] != document_id for p in after["passages"])
        gone = await refusal(
            client, "search_documents", query=QUESTION, collection_ids=[collection]
        )
        assert f"Collection not found: {collection}" in gone

    async with mcp_client(server, await new_key(http, carol, "read")) as client:
        refused = await refusal(
            client, "search_documents", query=QUESTION, document_ids=[document_id]
        )
        assert f"Document not found: {document_id}" in refused
        assert await refusal(client, "list_documents", collection_id=collection)
        mine = await call(client, "search_documents", query=QUESTION)
        assert all(p["source"]["document_id"] != document_id for p in mine["passages"])


# A question with a part for each of the handbook and the boiler note.
TWO_PARTS = "When do deployments happen, and who services the Vantor boiler?"


async def handbook_and_boiler(http: httpx.AsyncClient) -> str:
    """A `chat` key of a new user who uploaded the handbook and the boiler note."""
    owner = await auth_headers(http)
    await processed(http, owner, "handbook.txt", HANDBOOK)
    await processed(http, owner, "boiler.txt", BOILER)
    return await new_key(http, owner, "chat")


async def test_ask_in_research_mode_gives_the_model_every_part_s_passages(
    server: LiveServer, http: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    key = await handbook_and_boiler(http)
    fresh_llm.script("On Thursdays [1]; Kessler Heating services it [2].")
    async with mcp_client(server, key) as client:
        answer = await call(client, "ask", question=TWO_PARTS, research=True)
    assert answer["grounded"] is True
    prompt = json.dumps(fresh_llm.last_request["messages"])
    assert MARKER in prompt and "Kessler Heating" in prompt


async def test_ask_takes_filters_as_rest_and_v1_do(
    server: LiveServer, http: httpx.AsyncClient, fresh_llm: ScriptedLLM
) -> None:
    key = await handbook_and_boiler(http)
    fresh_llm.script("Kessler Heating services it [1].")
    async with mcp_client(server, key) as client:
        answer = await call(client, "ask", question=TWO_PARTS, filters={"name": "boiler"})
        assert {source["document_name"] for source in answer["sources"]} == {"boiler.txt"}
        assert MARKER not in json.dumps(fresh_llm.last_request["messages"])
        bad = await refusal(client, "ask", question=TWO_PARTS, filters={"kind": "exe"})
    assert "exe" in bad


async def test_ask_answers_with_citations_within_the_quota_and_is_recorded(
    server: LiveServer,
    http: httpx.AsyncClient,
    engine: AsyncEngine,
    fresh_llm: ScriptedLLM,
) -> None:
    owner = await auth_headers(http)
    document_id = await processed(http, owner, "handbook.txt", HANDBOOK)
    key = await new_key(http, owner, "chat")
    user_id = (await http.get("/api/v1/users/me", headers=owner)).json()["id"]

    fresh_llm.script("On Thursdays, after the 14:00 review [1].")
    async with mcp_client(server, key) as client:
        answer = await call(client, "ask", question=QUESTION, document_ids=[document_id])
        assert answer["answer"] == "On Thursdays, after the 14:00 review [1]."
        assert answer["grounded"] is True and answer["model"] == "scripted-model"
        assert [source["document_id"] for source in answer["sources"]] == [document_id]
        assert MARKER in json.dumps(fresh_llm.last_request["messages"])

        # The chat scope does not read: searching and listing need `read`.
        lacking = await refusal(client, "search_documents", query=QUESTION)
        assert "lacks the 'read' scope" in lacking
        async with create_sessionmaker(engine)() as session:
            holds = await session.execute(
                select(TokenHold).where(TokenHold.user_id == uuid.UUID(user_id))
            )
            assert holds.scalars().all() == []  # the answer's hold went with it

        # An administrator lowers the quota: the answer just given used it up.
        admin = await _admin(http, engine)
        limited = await http.patch(
            f"/api/v1/admin/users/{user_id}", headers=admin, json={"daily_token_limit": 30}
        )
        assert limited.status_code == 200
        requests_before = len(fresh_llm.requests)
        over = await refusal(client, "ask", question="And on Fridays?")
        assert "Daily token quota reached" in over
        assert len(fresh_llm.requests) == requests_before  # nothing refused reached the model

    async with mcp_client(server, await new_key(http, owner, "read")) as client:
        assert "lacks the 'chat' scope" in await refusal(client, "ask", question=QUESTION)

    async with create_sessionmaker(engine)() as session:
        events = (
            await session.execute(select(Event).where(Event.user_id == uuid.UUID(user_id)))
        ).scalars()
        recorded = [(event.type, event.payload.get("via")) for event in events]
    assert ("query_submitted", "mcp") in recorded and ("response_generated", "mcp") in recorded


async def _admin(http: httpx.AsyncClient, engine: AsyncEngine) -> dict[str, str]:
    email = unique_email("admin")
    async with create_sessionmaker(engine)() as session:
        await users_service.create(session, email=email, password=PASSWORD, role=Role.admin)
        await session.commit()
    response = await login(http, email)
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def test_the_endpoint_takes_live_api_keys_only(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    user = await auth_headers(http)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}

    async def status_of(headers: dict[str, str]) -> httpx.Response:
        return await http.post("/mcp", headers={**accept, **headers}, json=initialize)

    nothing = await status_of({})
    assert nothing.status_code == 401 and nothing.headers["www-authenticate"] == "Bearer"
    assert "API key" in nothing.json()["detail"]
    # A login's access token is for the web app, not for agents.
    assert (await status_of(user)).status_code == 401
    upload_only = await new_key(http, user, "upload")
    refused = await status_of({"Authorization": f"Bearer {upload_only}"})
    assert refused.status_code == 403 and "'chat' or 'read'" in refused.json()["detail"]

    key = await new_key(http, user, "read")
    opened = await status_of({"Authorization": f"Bearer {key}"})
    assert opened.status_code == 200
    # The package's version, not an empty one (issue 67, item 10).
    info = opened.json()["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("docchat", VERSION) and VERSION
    keys = (await http.get("/api/v1/api-keys", headers=user)).json()
    reader = next(k for k in keys if key.startswith(k["prefix"]))
    assert reader["last_used_at"] is not None
    revoked = await http.delete(f"/api/v1/api-keys/{reader['id']}", headers=user)
    assert revoked.status_code == 204
    assert (await status_of({"Authorization": f"Bearer {key}"})).status_code == 401


async def test_a_password_set_by_an_administrator_stops_the_keys_until_it_is_changed(
    server: LiveServer, http: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    user = await auth_headers(http)
    key = await new_key(http, user, "read")
    user_id = (await http.get("/api/v1/users/me", headers=user)).json()["id"]
    async with mcp_client(server, key) as client:
        await call(client, "list_collections")
        admin = await _admin(http, engine)
        reset = await http.post(f"/api/v1/admin/users/{user_id}/reset-password", headers=admin)
        assert reset.status_code == 200, reset.text
        # As on the REST API: nothing but a new password until the user chooses one (the
        # endpoint refuses the request before the tool is reached).
        with pytest.raises(MCPError):
            await client.call_tool("list_collections", {})
    bearer = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    opened = await http.post(
        "/mcp", headers=bearer, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
    )
    assert opened.status_code == 403 and "choose a new one first" in opened.json()["detail"]
    rest = await http.get("/api/v1/documents", headers={"Authorization": f"Bearer {key}"})
    assert rest.status_code == 403


async def test_the_endpoint_is_stateless_and_says_so(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    key = await new_key(http, await auth_headers(http), "read")
    for method in ("GET", "DELETE"):
        answer = await http.request(method, "/mcp", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
