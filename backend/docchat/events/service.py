"""Analytics: every event is a row in `events`, and also goes to RabbitMQ when configured."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.events.models import Event
from docchat.kit.schemas import strip_nul

QUERY_SUBMITTED = "query_submitted"
RESPONSE_GENERATED = "response_generated"
ROUTING_KEYS = {
    QUERY_SUBMITTED: "analytics.query.submitted",
    RESPONSE_GENERATED: "analytics.response.generated",
}


async def record(
    session: AsyncSession, event_type: str, user_id: uuid.UUID | None, payload: dict[str, Any]
) -> Event:
    # Model-written text may carry NUL characters, which PostgreSQL's JSONB refuses.
    event = Event(type=event_type, user_id=user_id, payload=strip_nul(payload))
    session.add(event)
    await session.flush()
    return event
