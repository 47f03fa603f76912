"""Analytics events to RabbitMQ (topic exchange) when AMQP_URL is set.

Publishing never fails a request: a broker that is down is logged and retried on the next
event after a pause, and the events table keeps the record either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

logger = logging.getLogger(__name__)
RECONNECT_PAUSE_SECONDS = 30.0
PUBLISH_TIMEOUT_SECONDS = 2.0


class EventPublisher:
    def __init__(self, amqp_url: str | None, exchange: str) -> None:
        self.amqp_url = amqp_url
        self.exchange_name = exchange
        self._connection: Any = None
        self._exchange: Any = None
        self._lock = asyncio.Lock()
        self._down_until = 0.0

    @property
    def enabled(self) -> bool:
        return bool(self.amqp_url)

    async def _ensure_exchange(self) -> Any:
        if self._exchange is not None and not self._connection.is_closed:
            return self._exchange
        import aio_pika
        from aio_pika.connection import Connection, make_url

        await self._drop_connection()
        # A plain connection, made here so that a failed one is closed here: this class does
        # its own reconnecting (`_down_until`), and a connection left for the garbage collector
        # schedules its own close, which outside a running loop is a coroutine never awaited.
        connection = Connection(make_url(self.amqp_url))
        try:
            await connection.connect(timeout=PUBLISH_TIMEOUT_SECONDS)
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.close()
            raise
        self._connection = connection
        channel = await self._connection.channel()
        self._exchange = await channel.declare_exchange(
            self.exchange_name, aio_pika.ExchangeType.TOPIC, durable=True
        )
        return self._exchange

    async def publish(self, routing_key: str, payload: dict[str, Any]) -> bool:
        """Send one event; True when the broker took it."""
        if not self.enabled or time.monotonic() < self._down_until:
            return False
        import aio_pika

        body = json.dumps(payload, default=str).encode()
        try:
            async with self._lock:
                exchange = await asyncio.wait_for(self._ensure_exchange(), PUBLISH_TIMEOUT_SECONDS)
            message = aio_pika.Message(
                body,
                content_type="application/json",
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            )
            await asyncio.wait_for(exchange.publish(message, routing_key), PUBLISH_TIMEOUT_SECONDS)
            return True
        except Exception as exc:
            logger.warning("analytics broker unavailable (%s); events stay in the database", exc)
            self._down_until = time.monotonic() + RECONNECT_PAUSE_SECONDS
            self._exchange = None
            return False

    async def _drop_connection(self) -> None:
        connection, self._connection, self._exchange = self._connection, None, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()

    async def close(self) -> None:
        await self._drop_connection()
