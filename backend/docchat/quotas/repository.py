"""All SQL of quotas: tokens used (from the usage events) and held by answers in progress."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.events.models import Event
from docchat.events.service import RESPONSE_GENERATED, SUMMARY_WRITTEN
from docchat.quotas.models import TokenHold


async def tokens_since(session: AsyncSession, user_id: uuid.UUID, since: datetime) -> int:
    prompt = func.coalesce(Event.payload["prompt_tokens"].as_integer(), 0)
    completion = func.coalesce(Event.payload["completion_tokens"].as_integer(), 0)
    statement = select(func.coalesce(func.sum(prompt + completion), 0)).where(
        Event.user_id == user_id,
        Event.type.in_([RESPONSE_GENERATED, SUMMARY_WRITTEN]),
        Event.created_at >= since,
    )
    return int((await session.execute(statement)).scalar_one())


async def tokens_held(session: AsyncSession, user_id: uuid.UUID, now: datetime) -> int:
    statement = select(func.coalesce(func.sum(TokenHold.tokens), 0)).where(
        TokenHold.user_id == user_id, TokenHold.expires_at > now
    )
    return int((await session.execute(statement)).scalar_one())


def add_hold(session: AsyncSession, hold: TokenHold) -> None:
    session.add(hold)


async def delete_hold(session: AsyncSession, hold_id: uuid.UUID) -> None:
    await session.execute(delete(TokenHold).where(TokenHold.id == hold_id))


async def delete_expired_holds(session: AsyncSession, user_id: uuid.UUID, now: datetime) -> None:
    await session.execute(
        delete(TokenHold).where(TokenHold.user_id == user_id, TokenHold.expires_at <= now)
    )
