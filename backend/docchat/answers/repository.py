"""All SQL of the answers package: the answer cache's entries (`cache.py`)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.answers.models import CachedAnswer


async def newest_answers(
    session: AsyncSession, user_id: uuid.UUID, key: bytes, after: datetime, limit: int
) -> list[CachedAnswer]:
    """The user's newest answers kept under `key` since `after`, newest first."""
    statement = (
        select(CachedAnswer)
        .where(
            CachedAnswer.user_id == user_id,
            CachedAnswer.context_key == key,
            CachedAnswer.created_at > after,
        )
        .order_by(CachedAnswer.created_at.desc())
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


async def count_hit(session: AsyncSession, answer_id: uuid.UUID) -> None:
    await session.execute(
        update(CachedAnswer).where(CachedAnswer.id == answer_id).values(hits=CachedAnswer.hits + 1)
    )


async def delete_older(session: AsyncSession, oldest: datetime) -> None:
    """Every entry written at `oldest` or before (expired)."""
    await session.execute(delete(CachedAnswer).where(CachedAnswer.created_at <= oldest))


def add(session: AsyncSession, answer: CachedAnswer) -> None:
    session.add(answer)
