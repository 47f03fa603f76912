"""All SQL for refresh tokens and API keys."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.models import ApiKey, RefreshToken
from docchat.db import utcnow


async def add_refresh_token(session: AsyncSession, token: RefreshToken) -> None:
    session.add(token)
    await session.flush()


async def get_for_update(session: AsyncSession, token_id: uuid.UUID) -> RefreshToken | None:
    return await session.get(RefreshToken, token_id, with_for_update=True)


async def revoke_family(session: AsyncSession, family_id: uuid.UUID) -> None:
    """Every token of one login stops working."""
    await session.execute(
        update(RefreshToken)
        .where(RefreshToken.family_id == family_id, RefreshToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


def add_api_key(session: AsyncSession, key: ApiKey) -> None:
    session.add(key)


async def api_keys_of(session: AsyncSession, user_id: uuid.UUID) -> Sequence[ApiKey]:
    """The user's keys, revoked ones included, newest first."""
    statement = (
        select(ApiKey)
        .where(ApiKey.user_id == user_id)
        .order_by(ApiKey.created_at.desc(), ApiKey.id)
    )
    return (await session.execute(statement)).scalars().all()


async def lock_api_key(session: AsyncSession, key_id: uuid.UUID) -> ApiKey | None:
    """The key, its row locked until the transaction ends."""
    return await session.get(ApiKey, key_id, with_for_update=True)


async def api_key_by_digest(session: AsyncSession, secret_digest: str) -> ApiKey | None:
    statement = select(ApiKey).where(ApiKey.secret_hash == secret_digest)
    return (await session.execute(statement)).scalar_one_or_none()
