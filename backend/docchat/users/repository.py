from __future__ import annotations

import functools
import uuid

from sqlalchemy import Select, Uuid, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.users.models import Role, User


def active_users() -> Select[User]:
    return select(User).where(User.deleted_at.is_(None))


async def get_by_email(session: AsyncSession, email: str) -> User | None:
    if "\x00" in email:  # no address has one, and PostgreSQL refuses it in a text parameter
        return None
    statement = active_users().where(func.lower(User.email) == email.lower())
    return (await session.execute(statement)).scalar_one_or_none()


async def get_by_id(session: AsyncSession, user_id: uuid.UUID) -> User | None:
    """The account, deactivated or not, unless it was deleted."""
    statement = active_users().where(User.id == user_id)
    return (await session.execute(statement)).scalar_one_or_none()


async def get_active(session: AsyncSession, user_id: uuid.UUID) -> User | None:
    """The signed-in account of every request: its statement is built once."""
    result = await session.execute(_active_by_id(), {"user_id": user_id})
    return result.scalar_one_or_none()


@functools.cache
def _active_by_id() -> Select[User]:
    user_id = bindparam("user_id", type_=Uuid())
    return active_users().where(User.id == user_id, User.is_active.is_(True))


async def email_of(session: AsyncSession, user_id: uuid.UUID) -> str | None:
    """The address of an account (active or not), for records that name it."""
    statement = select(User.email).where(User.id == user_id)
    email: str | None = (await session.execute(statement)).scalar_one_or_none()
    return email


async def add(session: AsyncSession, user: User) -> User:
    session.add(user)
    await session.flush()
    return user


async def count_other_active_admins(session: AsyncSession, user_id: uuid.UUID) -> int:
    """Active administrators besides the account."""
    others = select(func.count(User.id)).where(
        User.role == Role.admin,
        User.is_active.is_(True),
        User.deleted_at.is_(None),
        User.id != user_id,
    )
    return int((await session.execute(others)).scalar_one())
