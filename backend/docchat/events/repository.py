"""All SQL of analytics events."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Text, literal, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.events.models import Event


def add(session: AsyncSession, event: Event) -> None:
    session.add(event)


async def drop_payload_fields(
    session: AsyncSession, user_id: uuid.UUID, fields: Sequence[str]
) -> None:
    """Remove `fields` from the payload of every event of the user."""
    await session.execute(
        update(Event)
        .where(Event.user_id == user_id)
        .values(payload=Event.payload.op("-")(literal(list(fields), ARRAY(Text))))
    )
