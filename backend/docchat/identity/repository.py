"""All SQL of identity: the links between accounts and a source's people, the groups a source
mirrors, and the single sign-on codes redeemed lately."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Row, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.identity.models import ExternalIdentity, RedeemedCode
from docchat.membership.models import Group, GroupMember


async def link_of(session: AsyncSession, provider: str, subject: str) -> ExternalIdentity | None:
    statement = select(ExternalIdentity).where(
        ExternalIdentity.provider == provider, ExternalIdentity.subject == subject
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def is_linked(session: AsyncSession, user_id: uuid.UUID, provider: str) -> bool:
    """Whether the account is linked to someone of `provider` already."""
    statement = select(ExternalIdentity.id).where(
        ExternalIdentity.user_id == user_id, ExternalIdentity.provider == provider
    )
    return (await session.execute(statement)).first() is not None


def add_link(session: AsyncSession, link: ExternalIdentity) -> None:
    session.add(link)


async def delete_link(session: AsyncSession, link: ExternalIdentity) -> None:
    await session.delete(link)


async def source_groups_of(
    session: AsyncSession, user_id: uuid.UUID, source: str
) -> set[uuid.UUID]:
    """The groups of `source` the user is in."""
    statement = (
        select(GroupMember.group_id)
        .join(Group, Group.id == GroupMember.group_id)
        .where(GroupMember.user_id == user_id, Group.source == source)
    )
    return set((await session.execute(statement)).scalars())


async def leave_groups(
    session: AsyncSession, user_id: uuid.UUID, group_ids: Iterable[uuid.UUID]
) -> None:
    await session.execute(
        delete(GroupMember).where(
            GroupMember.user_id == user_id, GroupMember.group_id.in_(list(group_ids))
        )
    )


async def get_group(session: AsyncSession, group_id: uuid.UUID) -> Group | None:
    return await session.get(Group, group_id)


async def groups_named(session: AsyncSession, lowered: Iterable[str]) -> list[Group]:
    """The groups whose names, lowercased, are among `lowered`."""
    statement = select(Group).where(func.lower(Group.name).in_(list(lowered)))
    return list((await session.execute(statement)).scalars())


async def group_named(session: AsyncSession, lowered: str) -> Group:
    """The group whose name, lowercased, is `lowered` (it must exist)."""
    return (
        await session.execute(select(Group).where(func.lower(Group.name) == lowered))
    ).scalar_one()


def add_group(session: AsyncSession, group: Group) -> None:
    session.add(group)


async def forget_codes_before(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(RedeemedCode).where(RedeemedCode.created_at < before))


async def add_code(
    session: AsyncSession, code_digest: str, state_digest: str, now: datetime
) -> bool:
    """Write the code as redeemed; False when it was already."""
    statement = (
        pg_insert(RedeemedCode)
        .values(code_digest=code_digest, state_digest=state_digest, created_at=now)
        .on_conflict_do_nothing()
        .returning(RedeemedCode.code_digest)
    )
    return (await session.execute(statement)).first() is not None


async def set_code_outcome(
    session: AsyncSession, code_digest: str, kind: str, user_id: uuid.UUID | None, reason: str
) -> None:
    await session.execute(
        update(RedeemedCode)
        .where(RedeemedCode.code_digest == code_digest)
        .values(outcome=kind, user_id=user_id, reason=reason)
    )


async def redeemed_code(
    session: AsyncSession, code_digest: str
) -> Row[str, datetime, str | None, str, uuid.UUID | None] | None:
    """state_digest, created_at, outcome, reason and user_id of a redeemed code."""
    statement = select(
        RedeemedCode.state_digest,
        RedeemedCode.created_at,
        RedeemedCode.outcome,
        RedeemedCode.reason,
        RedeemedCode.user_id,
    ).where(RedeemedCode.code_digest == code_digest)
    return (await session.execute(statement)).first()
