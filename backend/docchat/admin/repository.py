"""All SQL of the admin area: the installation's counts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.chats.models import Chat
from docchat.documents.models import Document
from docchat.events.models import Event
from docchat.users.models import User


async def _scalar(session: AsyncSession, statement: Select[Any]) -> Any:
    return (await session.execute(statement)).scalar_one()


async def live_counts(session: AsyncSession) -> tuple[int, int, int]:
    """Users, documents and chats that are not deleted."""
    users = await _scalar(session, select(func.count(User.id)).where(User.deleted_at.is_(None)))
    documents = await _scalar(
        session, select(func.count(Document.id)).where(Document.deleted_at.is_(None))
    )
    chats = await _scalar(session, select(func.count(Chat.id)).where(Chat.deleted_at.is_(None)))
    return int(users), int(documents), int(chats)


async def event_count(session: AsyncSession, event_type: str) -> int:
    statement = select(func.count(Event.id)).where(Event.type == event_type)
    return int(await _scalar(session, statement))


async def average_latency_ms(session: AsyncSession, event_type: str) -> float | None:
    latency = Event.payload["latency_ms"].as_float()
    average = await _scalar(session, select(func.avg(latency)).where(Event.type == event_type))
    return float(average) if average is not None else None


async def last_active(
    session: AsyncSession, user_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, datetime]:
    """When each account last did something: its latest chat activity or audit entry (a login,
    a key made, ...), whichever is later; absent if never. Two index walks per page of users."""
    if not user_ids:
        return {}
    chats = (
        select(Chat.owner_id, func.max(Chat.updated_at))
        .where(Chat.owner_id.in_(user_ids))
        .group_by(Chat.owner_id)
    )
    entries = (
        select(AuditEntry.actor_id, func.max(AuditEntry.created_at))
        .where(AuditEntry.actor_id.in_(user_ids))
        .group_by(AuditEntry.actor_id)
    )
    latest: dict[uuid.UUID, datetime] = {}
    for statement in (chats, entries):
        for user_id, when in (await session.execute(statement)).all():
            if user_id is not None and when is not None:
                latest[user_id] = max(when, latest.get(user_id, when))
    return latest
