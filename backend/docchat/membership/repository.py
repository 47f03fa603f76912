"""The statements of `access.py` run: the collections a person belongs to and their role."""

from __future__ import annotations

import functools
import uuid

from sqlalchemy import Select, Uuid, bindparam
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.membership.access import member_collection_ids, memberships
from docchat.membership.models import EVERYONE_ID, ROLE_RANK, CollectionMember, CollectionRole
from docchat.users.models import User


@functools.cache
def _collection_ids_statement() -> Select[tuple[uuid.UUID]]:
    return member_collection_ids(bindparam("user_id", type_=Uuid()))


async def collection_ids_of(session: AsyncSession, user_id: uuid.UUID) -> list[uuid.UUID]:
    """The collections the user belongs to, directly or through groups. Every question asks:
    the statement is built once (built per call, SQLAlchemy spent 0.9 ms of CPU on it, 0.2
    built once)."""
    rows = await session.execute(_collection_ids_statement(), {"user_id": user_id})
    return [row.collection_id for row in rows]


async def role_in(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> CollectionRole | None:
    """The user's strongest role in the collection (directly or through groups), or None."""
    if collection_id == EVERYONE_ID:
        return CollectionRole.editor if user.is_admin else CollectionRole.viewer
    statement = memberships(user.id).where(CollectionMember.collection_id == collection_id)
    roles = [member.role for member in (await session.execute(statement)).scalars()]
    return max(roles, key=lambda role: ROLE_RANK[CollectionRole(role)], default=None)
