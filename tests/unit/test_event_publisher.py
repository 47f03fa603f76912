"""The analytics publisher leaves no connection for the garbage collector to close.

An aio-pika connection collected while open schedules its own `close()`; between two tests
(the loop open, none running) that coroutine is never awaited, and pytest reports it in
whichever test happens to be running then (CI saw it once, in the setup of another module's
test). The publisher now closes every connection it made, the failed ones too."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest

from docchat.events.publisher import EventPublisher

BROKER = "amqp://guest:guest@127.0.0.1:5672/"
NOWHERE = "amqp://guest:guest@127.0.0.1:1/"


@pytest.mark.parametrize("url", [BROKER, NOWHERE])
def test_a_publisher_leaves_nothing_to_close_later(url: str) -> None:
    caught: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = caught.append
    loop = asyncio.new_event_loop()
    try:
        publisher = EventPublisher(url, "docchat.test.publisher")
        loop.run_until_complete(publisher.publish("analytics.test", {"x": 1}))
        loop.run_until_complete(publisher.publish("analytics.test", {"x": 2}))
        loop.run_until_complete(publisher.close())
        del publisher
        gc.collect()  # as between two tests: the loop open, none running
    finally:
        sys.unraisablehook = previous
        loop.close()
    assert [str(unraisable.object) for unraisable in caught] == []
