"""Analytics: every event is a row in `events`, and also goes to RabbitMQ when configured."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.events import repository
from docchat.events.models import Event
from docchat.events.publisher import EventPublisher
from docchat.kit.schemas import strip_nul

QUERY_SUBMITTED = "query_submitted"
RESPONSE_GENERATED = "response_generated"
# A chat's running summary written by the model (`chats.summaries`): its tokens count too.
SUMMARY_WRITTEN = "summary_written"
ROUTING_KEYS = {
    QUERY_SUBMITTED: "analytics.query.submitted",
    RESPONSE_GENERATED: "analytics.response.generated",
}


async def record(
    session: AsyncSession, event_type: str, user_id: uuid.UUID | None, payload: dict[str, Any]
) -> Event:
    event = add(session, event_type, user_id, payload)
    await session.flush()
    return event


def add(
    session: AsyncSession, event_type: str, user_id: uuid.UUID | None, payload: dict[str, Any]
) -> Event:
    """The event, added to the session's transaction and written with its next flush (a
    message's events go with its other rows, not in a round trip of their own)."""
    # Model-written text may carry NUL characters, which PostgreSQL's JSONB refuses.
    event = Event(type=event_type, user_id=user_id, payload=strip_nul(payload))
    repository.add(session, event)
    return event


# Payload fields holding what a person wrote (the rest are counts, ids and model names).
PERSONAL_FIELDS = ("query",)


async def forget_words_of(session: AsyncSession, user_id: uuid.UUID) -> None:
    """Drop what the user wrote from their events (their account is being deleted); the
    counts and timings stay for the usage figures, belonging to no one once it is gone."""
    await repository.drop_payload_fields(session, user_id, PERSONAL_FIELDS)


_background: set[asyncio.Task[Any]] = set()


def publish(
    publisher: EventPublisher, event_type: str, user_id: uuid.UUID, payload: dict[str, Any]
) -> None:
    """Send an event to the broker in the background; never delays or fails a request."""
    if not publisher.enabled:
        return
    body = {"type": event_type, "user_id": str(user_id), **strip_nul(payload)}
    task = asyncio.create_task(publisher.publish(ROUTING_KEYS[event_type], body))
    _background.add(task)
    task.add_done_callback(_background.discard)
