"""Groups of users, managed by administrators; collections are shared with them as a whole."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.kit.errors import Conflict, NotFound
from docchat.kit.pagination import PageParams, paginate
from docchat.membership.models import Group, GroupMember
from docchat.sharing.schemas import GroupCreate, GroupMemberRead, GroupRead, GroupUpdate
from docchat.users.models import User

TAKEN = "A group with this name already exists"


async def _record(
    session: AsyncSession,
    action: audit.AuditAction,
    admin: User,
    group: Group,
    address: str | None,
    **detail: Any,
) -> None:
    await audit.record(
        session,
        action,
        actor=admin,
        target=("group", group.id),
        address=address,
        group=group.name,
        **detail,
    )


async def get(session: AsyncSession, group_id: uuid.UUID) -> Group:
    group = await session.get(Group, group_id)
    if group is None:
        raise NotFound("Group not found")
    return group


async def list_groups(session: AsyncSession, page: PageParams) -> tuple[list[GroupRead], int]:
    statement = select(Group).order_by(func.lower(Group.name), Group.id)
    groups, total = await paginate(session, statement, page)
    counts = dict(
        (
            await session.execute(
                select(GroupMember.group_id, func.count())
                .where(GroupMember.group_id.in_([group.id for group in groups]))
                .group_by(GroupMember.group_id)
            )
        ).all()
    )
    return [
        GroupRead(
            id=group.id,
            name=group.name,
            description=group.description,
            member_count=counts.get(group.id, 0),
        )
        for group in groups
    ], total


async def _flush_unique(session: AsyncSession) -> None:
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as exc:
        raise Conflict(TAKEN) from exc


async def create(
    session: AsyncSession, admin: User, data: GroupCreate, address: str | None
) -> Group:
    group = Group(name=data.name.strip(), description=data.description.strip())
    session.add(group)
    await _flush_unique(session)
    await _record(session, audit.AuditAction.group_created, admin, group, address)
    return group


async def update(session: AsyncSession, group_id: uuid.UUID, data: GroupUpdate) -> Group:
    group = await get(session, group_id)
    if data.name is not None:
        group.name = data.name.strip()
    if data.description is not None:
        group.description = data.description.strip()
    await _flush_unique(session)
    return group


async def delete_group(
    session: AsyncSession, admin: User, group_id: uuid.UUID, address: str | None
) -> None:
    """The group and its memberships go: its members lose what was shared with the group."""
    group = await get(session, group_id)
    await _record(session, audit.AuditAction.group_deleted, admin, group, address)
    await session.delete(group)
    await session.flush()


async def members(
    session: AsyncSession, group_id: uuid.UUID, page: PageParams
) -> tuple[Sequence[GroupMemberRead], int]:
    await get(session, group_id)
    statement = (
        select(User)
        .join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group_id, User.deleted_at.is_(None))
        .order_by(User.email)
    )
    users, total = await paginate(session, statement, page)
    items = [
        GroupMemberRead(user_id=user.id, email=user.email, display_name=user.display_name)
        for user in users
    ]
    return items, total


async def add_member(
    session: AsyncSession, admin: User, group_id: uuid.UUID, user_id: uuid.UUID, address: str | None
) -> None:
    group = await get(session, group_id)
    user = await session.get(User, user_id)
    if user is None or user.deleted_at is not None:
        raise NotFound("User not found")
    await session.execute(
        insert(GroupMember).values(group_id=group.id, user_id=user.id).on_conflict_do_nothing()
    )
    await _record(
        session, audit.AuditAction.group_member_added, admin, group, address, email=user.email
    )


async def remove_member(
    session: AsyncSession, admin: User, group_id: uuid.UUID, user_id: uuid.UUID, address: str | None
) -> None:
    group = await get(session, group_id)
    removed = await session.execute(
        delete(GroupMember).where(GroupMember.group_id == group.id, GroupMember.user_id == user_id)
    )
    if removed.rowcount == 0:  # type: ignore[attr-defined]
        raise NotFound("That user is not in this group")
    await _record(
        session, audit.AuditAction.group_member_removed, admin, group, address, user_id=str(user_id)
    )
