from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from typing import Any

import aio_pika
import httpx
import pytest

from docchat.events.publisher import EventPublisher
from docchat.main.app import attach_components
from docchat.main.components import Components
from tests.support.chat import ask
from tests.support.users import auth_headers

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


async def _broker_available() -> bool:
    try:
        connection = await aio_pika.connect(AMQP_URL, timeout=2)
    except Exception:
        return False
    await connection.close()
    return True


async def test_events_are_published_with_routing_keys(
    client: httpx.AsyncClient, components: Components, app: Any
) -> None:
    if not await _broker_available():
        pytest.fail(
            "RabbitMQ is not running on 127.0.0.1:5672 (start it: rabbitmq-server -detached)"
        )
    exchange_name = f"docchat.test.{uuid.uuid4().hex[:8]}"
    publisher = EventPublisher(AMQP_URL, exchange_name)
    attach_components(app, dataclasses.replace(components, publisher=publisher))

    connection = await aio_pika.connect(AMQP_URL)
    try:
        channel = await connection.channel()
        exchange = await channel.declare_exchange(
            exchange_name, aio_pika.ExchangeType.TOPIC, durable=True
        )
        queue = await channel.declare_queue(exclusive=True)
        await queue.bind(exchange, routing_key="analytics.#")

        headers = await auth_headers(client)
        body = (await ask(client, headers, "hello broker")).json()

        received: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 10
        while len(received) < 2 and time.monotonic() < deadline:
            message = await queue.get(no_ack=True, fail=False)
            if message is None:
                await asyncio.sleep(0.05)
                continue
            received[message.routing_key or ""] = json.loads(message.body)
        assert set(received) == {"analytics.query.submitted", "analytics.response.generated"}
        assert received["analytics.query.submitted"]["chat_id"] == body["chat_id"]
        generated = received["analytics.response.generated"]
        assert generated["type"] == "response_generated" and "latency_ms" in generated
        await exchange.delete()
    finally:
        await publisher.close()
        await connection.close()


async def test_a_broker_that_is_down_never_fails_a_request(
    client: httpx.AsyncClient, components: Components, app: Any
) -> None:
    publisher = EventPublisher("amqp://guest:guest@127.0.0.1:1/", "docchat.analytics")
    attach_components(app, dataclasses.replace(components, publisher=publisher))
    headers = await auth_headers(client)
    response = await ask(client, headers, "hello")
    assert response.status_code == 200
    assert await publisher.publish("analytics.test", {"x": 1}) is False
