"""All SQL for refresh tokens."""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.models import RefreshToken
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
