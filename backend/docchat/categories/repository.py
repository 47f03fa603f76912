from __future__ import annotations

import uuid

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.categories.models import Category


def owned_by(user_id: uuid.UUID) -> Select[Category]:
    return select(Category).where(Category.owner_id == user_id)


async def get_owned(
    session: AsyncSession, user_id: uuid.UUID, category_id: uuid.UUID
) -> Category | None:
    statement = owned_by(user_id).where(Category.id == category_id)
    return (await session.execute(statement)).scalar_one_or_none()


async def get_owned_by_name(
    session: AsyncSession, user_id: uuid.UUID, name: str
) -> Category | None:
    statement = owned_by(user_id).where(Category.name == name)
    return (await session.execute(statement)).scalar_one_or_none()


def add(session: AsyncSession, category: Category) -> None:
    session.add(category)


async def delete(session: AsyncSession, category: Category) -> None:
    """The category; chats and documents keep existing, their category_id set to NULL by the
    foreign key."""
    await session.delete(category)
