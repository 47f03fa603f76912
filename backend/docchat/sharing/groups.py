"""Groups of users, managed by administrators; collections are shared with them as a whole."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.kit.errors import Conflict, NotFound
from docchat.kit.pagination import PageParams
from docchat.membership.models import LOCAL, Group, kept_by
from docchat.sharing import repository
from docchat.sharing.schemas import GroupCreate, GroupMemberRead, GroupRead, GroupUpdate
from docchat.users import repository as users_repository
from docchat.users.models import User

TAKEN = "A group with this name already exists"
MIRRORED = "The members of {name} are kept in step with {origin} at each login: change them there"
RENAME_MIRRORED = "{name} takes its name from {origin}: rename it there"


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
    group = await repository.get_group(session, group_id)
    if group is None:
        raise NotFound("Group not found")
    return group


async def _local(session: AsyncSession, group_id: uuid.UUID) -> Group:
    """A group whose members administrators choose (not one a directory or single sign-on
    fills)."""
    group = await get(session, group_id)
    if group.source != LOCAL:
        raise Conflict(MIRRORED.format(name=group.name, origin=kept_by(group.source)))
    return group


async def list_groups(session: AsyncSession, page: PageParams) -> tuple[list[GroupRead], int]:
    groups, total = await repository.groups_page(session, page)
    counts = await repository.member_counts(session, [group.id for group in groups])
    return [
        GroupRead(
            id=group.id,
            name=group.name,
            description=group.description,
            source=group.source,
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
    await repository.add_group(session, group)
    await _flush_unique(session)
    await _record(session, audit.AuditAction.group_created, admin, group, address)
    return group


async def update(session: AsyncSession, group_id: uuid.UUID, data: GroupUpdate) -> Group:
    group = await get(session, group_id)
    if data.name is not None and data.name.strip() != group.name and group.source != LOCAL:
        raise Conflict(RENAME_MIRRORED.format(name=group.name, origin=kept_by(group.source)))
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
    await repository.remove_group(session, group)


async def members(
    session: AsyncSession, group_id: uuid.UUID, page: PageParams
) -> tuple[Sequence[GroupMemberRead], int]:
    await get(session, group_id)
    users, total = await repository.group_members_page(session, group_id, page)
    items = [
        GroupMemberRead(user_id=user.id, email=user.email, display_name=user.display_name)
        for user in users
    ]
    return items, total


async def add_member(
    session: AsyncSession, admin: User, group_id: uuid.UUID, user_id: uuid.UUID, address: str | None
) -> None:
    group = await _local(session, group_id)
    user = await repository.live_user(session, user_id)
    if user is None:
        raise NotFound("User not found")
    await repository.put_in_group(session, group.id, user.id)
    await _record(
        session, audit.AuditAction.group_member_added, admin, group, address, email=user.email
    )


async def remove_member(
    session: AsyncSession, admin: User, group_id: uuid.UUID, user_id: uuid.UUID, address: str | None
) -> None:
    group = await _local(session, group_id)
    if not await repository.take_from_group(session, group.id, user_id):
        raise NotFound("That user is not in this group")
    email = await users_repository.email_of(session, user_id) or "a deleted account"
    await _record(
        session, audit.AuditAction.group_member_removed, admin, group, address, email=email
    )
