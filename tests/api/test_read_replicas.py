"""Questions read from a PostgreSQL read replica (`DATABASE_REPLICA_URLS`): a real primary and a
real hot standby streaming from it, both started here on loopback (`tests.support.replication`).

What a user must see: the same answer whether the replica serves it or not; a document added
before a question found even while the replica lags; no error when the replica goes away, before
or in the middle of a question; and the replica used again once it is back."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY

from docchat.db import create_engine, create_sessionmaker
from docchat.documents.scopes import search_scope
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.replicas import routing
from docchat.replicas.routing import Replica
from docchat.users.models import User
from tests.support.chat import ask
from tests.support.database import alembic
from tests.support.documents import upload_and_process
from tests.support.llm_server import ScriptedLLM
from tests.support.replication import Replication, primary_and_standby
from tests.support.users import auth_headers

HARBOUR = b"Visitors to the Harbour archive must book the reading room two days ahead."
LIGHTHOUSE = b"The Lighthouse museum opens its tower stairs only on the first Sunday of May."


@pytest.fixture(scope="module")
def replication() -> Iterator[Replication]:
    with primary_and_standby() as pair:
        yield pair


@pytest_asyncio.fixture(scope="module")
async def replicated(
    replication: Replication, base_components: Components
) -> AsyncIterator[Components]:
    """The service's components on the test primary, with the standby as its read replica."""
    await alembic(replication.primary.url, "upgrade", "head")
    engine = create_engine(replication.primary.url, pool_size=5)
    replica = Replica.open(replication.standby.url)
    components = dataclasses.replace(
        base_components, sessionmaker=create_sessionmaker(engine), replicas=(replica,)
    )
    yield components
    await components.reads.close()
    await engine.dispose()


@pytest_asyncio.fixture
async def client(replicated: Components) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(replicated.settings, run_worker=False)
    attach_components(app, replicated)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client


@pytest.fixture(autouse=True)
def standby_up(replication: Replication, replicated: Components) -> Iterator[None]:
    """Every test starts and ends with the standby up, replaying, and not left for a while."""
    yield
    if replication.standby.sql_or_none("SELECT 1") is None:
        replication.standby.start("hot_standby=on")
    replication.standby.sql("SELECT pg_wal_replay_resume()")
    for replica in replicated.replicas:
        replica.down_until = 0.0


def _questions(target: str, reason: str = "") -> float:
    labels = {"target": target, "reason": reason}
    return REGISTRY.get_sample_value("docchat_question_reads_total", labels) or 0.0


async def _document(
    client: httpx.AsyncClient, components: Components, headers: dict[str, str], content: bytes
) -> str:
    name = f"{uuid.uuid4().hex[:6]}.txt"
    document = await upload_and_process(client, components, headers, name, content)
    assert document["status"] == "completed", document
    return name


async def _ask(client: httpx.AsyncClient, headers: dict[str, str], question: str) -> Any:
    response = await ask(client, headers, question)
    assert response.status_code == 200, response.text
    return response.json()["assistant_message"]


def _cited(answer: Any) -> list[str]:
    return [source["document_name"] for source in answer["sources"] or []]


async def test_a_question_reads_from_the_replica_and_cites_what_the_primary_holds(
    client: httpx.AsyncClient,
    replicated: Components,
    replication: Replication,
    fresh_llm: ScriptedLLM,
) -> None:
    headers = await auth_headers(client)
    name = await _document(client, replicated, headers, HARBOUR)
    replication.caught_up()
    before = _questions("replica")
    fresh_llm.script("Book it two days ahead [1].")
    answer = await _ask(client, headers, "How early must the Harbour reading room be booked?")
    assert _cited(answer) == [name]
    assert "two days ahead" in json.dumps(fresh_llm.requests)
    assert _questions("replica") == before + 1
    # The standby answered the reads: it is the one whose chunk rows were scanned.
    assert replication.standby.sql("SELECT pg_is_in_recovery()") == "t"

    # The OpenAI-compatible endpoint routes its questions the same way.
    fresh_llm.script("Two days ahead [1].")
    completion = await client.post(
        "/v1/chat/completions",
        headers=headers,
        json={
            "model": "scripted-model",
            "index_name": "all",
            "messages": [{"role": "user", "content": "When to book the Harbour reading room?"}],
        },
    )
    assert completion.status_code == 200, completion.text
    assert _questions("replica") == before + 2
    assert "two days ahead" in json.dumps(fresh_llm.requests)


async def test_a_lagging_replica_leaves_the_question_to_the_primary(
    client: httpx.AsyncClient,
    replicated: Components,
    replication: Replication,
    fresh_llm: ScriptedLLM,
) -> None:
    """A document processed while the replica had stopped replaying is still found: the
    question began after it was committed, and the replica had not replayed that far."""
    headers = await auth_headers(client)
    replication.standby.sql("SELECT pg_wal_replay_pause()")
    name = await _document(client, replicated, headers, LIGHTHOUSE)
    listed = replication.standby.sql("SELECT string_agg(filename, ',') FROM documents")
    assert name not in listed  # the replica has not replayed it
    before = _questions("primary", "behind")
    fresh_llm.script("Only on the first Sunday of May [1].")
    answer = await _ask(client, headers, "When are the Lighthouse tower stairs open?")
    assert _cited(answer) == [name]
    assert _questions("primary", "behind") == before + 1


async def test_a_replica_that_goes_away_mid_question_leaves_the_rest_to_the_primary(
    replicated: Components, replication: Replication, client: httpx.AsyncClient
) -> None:
    headers = await auth_headers(client)
    await _document(client, replicated, headers, HARBOUR)
    me = await client.get("/api/v1/users/me", headers=headers)
    replication.caught_up()
    lexical = replicated.lexical
    async with replicated.sessionmaker() as session:
        user = await session.get(User, uuid.UUID(me.json()["id"]))
        assert user is not None
        scope = await search_scope(session, user)
        await replicated.reads.begin(session)  # as a question does, in its own transaction
    assert await lexical.languages_in(scope)  # the first read: on the replica
    failed = _questions("primary", "failed")
    replication.standby.stop("immediate")  # its pooled connection dies with it
    hits = await lexical.search(scope, "Harbour reading room booked", 5)
    assert hits and b"two days ahead" in hits[0].chunk.text.encode()
    assert _questions("primary", "failed") == failed + 1


async def test_a_replica_that_is_down_is_left_then_used_again_once_back(
    client: httpx.AsyncClient,
    replicated: Components,
    replication: Replication,
    fresh_llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(routing, "REPLICA_RETRY_SECONDS", 0.0)
    headers = await auth_headers(client)
    name = await _document(client, replicated, headers, HARBOUR)
    replication.caught_up()
    replication.standby.stop("immediate")
    failed, replica = _questions("primary", "failed"), _questions("replica")
    fresh_llm.script("Book it two days ahead [1].", "Book it two days ahead [1].")
    answer = await _ask(client, headers, "How early must the Harbour reading room be booked?")
    assert _cited(answer) == [name]  # no error shown: the primary answered
    assert _questions("primary", "failed") == failed + 1

    replication.standby.start("hot_standby=on")
    replication.caught_up()
    again = await _ask(client, headers, "How early must the Harbour reading room be booked?")
    assert _cited(again) == [name]
    assert _questions("replica") == replica + 1
