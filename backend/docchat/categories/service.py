from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.categories import repository
from docchat.categories.models import Category
from docchat.kit.errors import Conflict, NotFound
from docchat.kit.pagination import PageParams, paginate
from docchat.users.models import User


async def get_owned(session: AsyncSession, user: User, category_id: uuid.UUID) -> Category:
    category = await repository.get_owned(session, user.id, category_id)
    if category is None:
        raise NotFound("Category not found")
    return category


async def list_owned(
    session: AsyncSession, user: User, page: PageParams
) -> tuple[Sequence[Category], int]:
    statement = repository.owned_by(user.id).order_by(Category.name, Category.id)
    return await paginate(session, statement, page)


async def _ensure_name_free(
    session: AsyncSession, user: User, name: str, *, except_id: uuid.UUID | None = None
) -> None:
    existing = await repository.get_owned_by_name(session, user.id, name)
    if existing is not None and existing.id != except_id:
        raise _taken(name)


def _taken(name: str) -> Conflict:
    return Conflict(f"You already have a category named {name!r}")


async def create(session: AsyncSession, user: User, name: str) -> Category:
    await _ensure_name_free(session, user, name)
    category = Category(owner_id=user.id, name=name)
    try:
        # Two requests creating one name at once both pass the check: the index decides.
        async with session.begin_nested():
            repository.add(session, category)
    except IntegrityError:
        raise _taken(name) from None
    return category


async def rename(session: AsyncSession, category: Category, user: User, name: str) -> Category:
    await _ensure_name_free(session, user, name, except_id=category.id)
    try:
        async with session.begin_nested():
            category.name = name
    except IntegrityError:
        raise _taken(name) from None
    return category


async def delete(session: AsyncSession, category: Category) -> None:
    # Chats and documents keep existing; their category_id is set to NULL by the foreign key.
    await repository.delete(session, category)
    await session.flush()
