"""All SQL of deleting an account (`deletion.py`): what others rely on, what the plan counts,
the locks, and the rows that go with the account or to its heir."""

from __future__ import annotations

import uuid

from sqlalchemy import ColumnElement, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.models import ApiKey
from docchat.chats.models import Chat
from docchat.documents.models import Document, Visibility
from docchat.membership.access import others_in, solely_owned
from docchat.membership.models import (
    Collection,
    CollectionDocument,
    CollectionMember,
    CollectionRole,
)
from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceState
from docchat.users.models import User


async def relied_on_documents(
    session: AsyncSession, user_id: uuid.UUID
) -> list[tuple[Document, list[str]]]:
    """The user's live documents others read, each with the collections they read it
    through (none for one shared with everyone alone), oldest first."""
    through = (
        select(CollectionDocument.document_id, func.array_agg(Collection.name).label("names"))
        .join(Collection, Collection.id == CollectionDocument.collection_id)
        .where(
            CollectionDocument.owner_id == user_id,
            Collection.deleted_at.is_(None),
            others_in(Collection.id, user_id),
        )
        .group_by(CollectionDocument.document_id)
        .subquery()
    )
    statement = (
        select(Document, through.c.names)
        .outerjoin(through, through.c.document_id == Document.id)
        .where(
            Document.owner_id == user_id,
            Document.deleted_at.is_(None),
            or_(Document.visibility == Visibility.shared, through.c.document_id.is_not(None)),
        )
        .order_by(Document.created_at, Document.id)
    )
    return [(row[0], sorted(row[1] or [])) for row in await session.execute(statement)]


async def relied_on_collections(
    session: AsyncSession, user_id: uuid.UUID
) -> list[tuple[Collection, int]]:
    """Collections the user alone owns that others are in, with how many others."""
    others = (
        select(func.count(CollectionMember.id))
        .where(
            CollectionMember.collection_id == Collection.id,
            CollectionMember.accepted_at.is_not(None),
            (CollectionMember.group_id.is_not(None)) | (CollectionMember.user_id != user_id),
        )
        .scalar_subquery()
    )
    statement = (
        solely_owned(user_id)
        .add_columns(others)
        .where(others_in(Collection.id, user_id))
        .order_by(Collection.created_at, Collection.id)
    )
    return [(row[0], int(row[1])) for row in await session.execute(statement)]


async def _count(
    session: AsyncSession, counted: ColumnElement[int], *where: ColumnElement[bool]
) -> int:
    return int((await session.execute(select(counted).where(*where))).scalar_one())


async def count_live_documents(session: AsyncSession, user_id: uuid.UUID) -> int:
    return await _count(
        session,
        func.count(Document.id),
        Document.owner_id == user_id,
        Document.deleted_at.is_(None),
    )


async def count_live_chats(session: AsyncSession, user_id: uuid.UUID) -> int:
    return await _count(
        session, func.count(Chat.id), Chat.owner_id == user_id, Chat.deleted_at.is_(None)
    )


async def count_live_api_keys(session: AsyncSession, user_id: uuid.UUID) -> int:
    return await _count(
        session, func.count(ApiKey.id), ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None)
    )


async def count_solely_owned_collections(session: AsyncSession, user_id: uuid.UUID) -> int:
    owned = select(func.count()).select_from(solely_owned(user_id).subquery())
    return int((await session.execute(owned)).scalar_one())


async def lock_account(session: AsyncSession, user_id: uuid.UUID) -> User | None:
    """The live account's row, read afresh and locked until the transaction ends, after its
    sources' rows (the order a sync locks them in)."""
    await session.execute(
        select(SourceRow.id).where(SourceRow.owner_id == user_id).with_for_update()
    )
    statement = select(User).where(User.id == user_id, User.deleted_at.is_(None)).with_for_update()
    user = (await session.execute(statement)).scalar_one_or_none()
    if user is not None:
        await session.refresh(user)
    return user


async def membership_of(
    session: AsyncSession, collection_id: uuid.UUID, user_id: uuid.UUID
) -> CollectionMember | None:
    statement = select(CollectionMember).where(
        CollectionMember.collection_id == collection_id, CollectionMember.user_id == user_id
    )
    return (await session.execute(statement)).scalar_one_or_none()


def add_member(session: AsyncSession, member: CollectionMember) -> None:
    session.add(member)


async def delete_own_collections(session: AsyncSession, user_id: uuid.UUID) -> None:
    """The collections only the user used, and those they owned and deleted before (no one
    sees a deleted collection; its name and members go now)."""
    alone = solely_owned(user_id).where(~others_in(Collection.id, user_id))
    owned = select(CollectionMember.collection_id).where(
        CollectionMember.user_id == user_id, CollectionMember.role == CollectionRole.owner
    )
    await session.execute(
        delete(Collection).where(
            Collection.id.in_(alone.with_only_columns(Collection.id))
            | (Collection.deleted_at.is_not(None) & Collection.id.in_(owned))
        )
    )


async def delete_invitations_to(session: AsyncSession, email: str) -> None:
    """Invitations still waiting for the address (they would let a new account in)."""
    await session.execute(
        delete(CollectionMember).where(func.lower(CollectionMember.invited_email) == email.lower())
    )


async def delete_user(session: AsyncSession, user_id: uuid.UUID) -> None:
    """The account's row, and through ON DELETE CASCADE everything that names it."""
    await session.execute(delete(User).where(User.id == user_id))


async def hand_over_sources(
    session: AsyncSession, user_id: uuid.UUID, heir_id: uuid.UUID, collection_ids: list[uuid.UUID]
) -> None:
    """The account's sources in the collections handed to the heir go to the heir too,
    paused: they sync with the deleted person's credentials, which the heir should check
    before resuming. Its other sources go with the account (their documents stay as decided)."""
    await session.execute(
        update(SourceRow)
        .where(SourceRow.owner_id == user_id, SourceRow.collection_id.in_(collection_ids))
        .values(
            owner_id=heir_id,
            state=SourceState.paused,
            claim_token=None,
            next_sync_at=None,
            last_error="Paused: the account that added it was deleted and it was handed over; "
            "check its settings and credentials, then resume it",
        )
    )


async def sources_of(session: AsyncSession, user_id: uuid.UUID) -> list[SourceRow]:
    return list(
        (await session.execute(select(SourceRow).where(SourceRow.owner_id == user_id))).scalars()
    )
