"""The SQL of sharing: collections, their members, documents and invitations, and groups.

Who may read what is decided by `membership.access` (the statements every document read
builds on); this module reads and writes the rows the sharing services manage.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import ColumnElement, Row, Select, delete, func, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, Visibility
from docchat.documents.repository import in_collections
from docchat.kit.pagination import PageParams, paginate
from docchat.membership.access import readable_collections
from docchat.membership.models import (
    EVERYONE_ID,
    Collection,
    CollectionDocument,
    CollectionMember,
    CollectionRole,
    Group,
    GroupMember,
)
from docchat.users.models import User

# -- collections ----------------------------------------------------------------------------


async def get_collection(session: AsyncSession, collection_id: uuid.UUID) -> Collection | None:
    return await session.get(Collection, collection_id)


async def readable_ids_among(
    session: AsyncSession, user: User, collection_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    statement = readable_collections(user).where(Collection.id.in_(list(collection_ids)))
    return {collection.id for collection in (await session.execute(statement)).scalars()}


async def readable_by_id(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> Collection | None:
    statement = readable_collections(user).where(Collection.id == collection_id)
    return (await session.execute(statement)).scalar_one_or_none()


async def readable_named(session: AsyncSession, user: User, name: str) -> list[Collection]:
    """Collections the user may read whose name is `name` (case-insensitive), oldest first."""
    statement = (
        readable_collections(user)
        .where(func.lower(Collection.name) == name.strip().lower())
        .order_by(Collection.created_at, Collection.id)
    )
    return list((await session.execute(statement)).scalars())


async def owned_among(
    session: AsyncSession, user_id: uuid.UUID, collection_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Which of the collections the user is an (accepted) owner of, directly."""
    statement = select(CollectionMember.collection_id).where(
        CollectionMember.collection_id.in_(list(collection_ids)),
        CollectionMember.user_id == user_id,
        CollectionMember.role == CollectionRole.owner,
        CollectionMember.accepted_at.is_not(None),
    )
    return set((await session.execute(statement)).scalars())


async def readable_document_count(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> int:
    statement = documents_repository.readable_by(user).where(in_collections([collection_id]))
    count = select(func.count()).select_from(statement.subquery())
    return int((await session.execute(count)).scalar_one())


async def readable_page(
    session: AsyncSession, user: User, page: PageParams
) -> tuple[Sequence[Collection], int]:
    """Everyone first, then the user's collections by name."""
    statement = readable_collections(user).order_by(
        (Collection.id != EVERYONE_ID), func.lower(Collection.name), Collection.id
    )
    return await paginate(session, statement, page)


async def add_collection(session: AsyncSession, collection: Collection) -> Collection:
    session.add(collection)
    await session.flush()
    return collection


async def documents_page(
    session: AsyncSession, user: User, collection_id: uuid.UUID, page: PageParams
) -> tuple[Sequence[Document], int]:
    statement = (
        documents_repository.readable_by(user)
        .where(in_collections([collection_id]))
        .order_by(Document.created_at.desc(), Document.id)
    )
    return await paginate(session, statement, page)


async def put_document(
    session: AsyncSession, collection_id: uuid.UUID, document_id: uuid.UUID, added_by: uuid.UUID
) -> None:
    await session.execute(
        insert(CollectionDocument)
        .values(
            collection_id=collection_id,
            document_id=document_id,
            owner_id=select(Document.owner_id).where(Document.id == document_id).scalar_subquery(),
            added_by=added_by,
        )
        .on_conflict_do_nothing()
    )


async def take_document(
    session: AsyncSession, collection_id: uuid.UUID, document_id: uuid.UUID
) -> str | None:
    """Out of the collection: the document's file name, for the audit log; None when it was
    not in it."""
    removed = await session.execute(
        delete(CollectionDocument)
        .where(
            CollectionDocument.collection_id == collection_id,
            CollectionDocument.document_id == document_id,
        )
        .returning(CollectionDocument.document_id)
    )
    if removed.scalar_one_or_none() is None:
        return None
    return await session.scalar(select(Document.filename).where(Document.id == document_id))


async def shared_document(session: AsyncSession, document_id: uuid.UUID) -> Document | None:
    """A document shared with everyone (in the built-in collection), or None."""
    document = await session.get(Document, document_id)
    return document if document is not None and document.visibility == Visibility.shared else None


# -- members and invitations ----------------------------------------------------------------


async def members_of(
    session: AsyncSession, collection_id: uuid.UUID
) -> list[Row[CollectionMember, str | None, str | None]]:
    """(member, the user's email, the group's name), in the order they were added."""
    statement = (
        select(CollectionMember, User.email, Group.name)
        .outerjoin(User, User.id == CollectionMember.user_id)
        .outerjoin(Group, Group.id == CollectionMember.group_id)
        .where(CollectionMember.collection_id == collection_id)
        .order_by(CollectionMember.created_at, CollectionMember.id)
    )
    return list((await session.execute(statement)).all())


async def add_member(session: AsyncSession, member: CollectionMember) -> CollectionMember:
    session.add(member)
    await session.flush()
    return member


async def member_exists(
    session: AsyncSession, member: CollectionMember, email: str | None = None
) -> bool:
    """The collection has this user, group or invited address already (a user also when
    their `email` was invited before they had an account)."""
    if member.group_id is not None:
        same = CollectionMember.group_id == member.group_id
    elif member.user_id is not None:
        same = CollectionMember.user_id == member.user_id
        if email is not None:
            same = same | (CollectionMember.invited_email == email)
    else:
        same = CollectionMember.invited_email == member.invited_email
    statement = select(CollectionMember.id).where(
        CollectionMember.collection_id == member.collection_id, same
    )
    return (await session.execute(statement)).first() is not None


async def get_member_for_update(
    session: AsyncSession, member_id: uuid.UUID
) -> CollectionMember | None:
    return await session.get(CollectionMember, member_id, with_for_update=True)


async def remove_member(session: AsyncSession, member: CollectionMember) -> None:
    await session.delete(member)
    await session.flush()


async def other_owners(session: AsyncSession, collection_id: uuid.UUID, besides: uuid.UUID) -> int:
    """Owners who have accepted, other than the membership `besides` (an invitation to own the
    collection does not keep it owned)."""
    statement = select(func.count(CollectionMember.id)).where(
        CollectionMember.collection_id == collection_id,
        CollectionMember.role == CollectionRole.owner,
        CollectionMember.accepted_at.is_not(None),
        CollectionMember.id != besides,
    )
    return int((await session.execute(statement)).scalar_one())


def _invited(user: User) -> ColumnElement[bool]:
    """Memberships waiting for this user: by their account or by their address."""
    return CollectionMember.accepted_at.is_(None) & or_(
        CollectionMember.user_id == user.id,
        CollectionMember.invited_email == user.email.lower(),
    )


async def invitations_of(
    session: AsyncSession, user: User
) -> list[Row[CollectionMember, Collection, str | None]]:
    """(membership, collection, the inviter's email) of live collections, newest first."""
    inviter = aliased(User)
    statement: Select[CollectionMember, Collection, str | None] = (
        select(CollectionMember, Collection, inviter.email)
        .join(Collection, Collection.id == CollectionMember.collection_id)
        .outerjoin(inviter, inviter.id == CollectionMember.added_by)
        .where(_invited(user), Collection.deleted_at.is_(None))
        .order_by(CollectionMember.created_at.desc(), CollectionMember.id)
    )
    return list((await session.execute(statement)).all())


async def invitation_for_update(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> CollectionMember | None:
    statement = (
        select(CollectionMember)
        .where(CollectionMember.collection_id == collection_id, _invited(user))
        .with_for_update()
    )
    return (await session.execute(statement)).scalars().first()


# -- groups ---------------------------------------------------------------------------------


async def get_group(session: AsyncSession, group_id: uuid.UUID | None) -> Group | None:
    return await session.get(Group, group_id) if group_id is not None else None


async def in_group(session: AsyncSession, group_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    statement = select(GroupMember.user_id).where(
        GroupMember.group_id == group_id, GroupMember.user_id == user_id
    )
    return (await session.execute(statement)).first() is not None


async def groups_page(session: AsyncSession, page: PageParams) -> tuple[Sequence[Group], int]:
    statement = select(Group).order_by(func.lower(Group.name), Group.id)
    return await paginate(session, statement, page)


async def member_counts(
    session: AsyncSession, group_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, int]:
    statement = (
        select(GroupMember.group_id, func.count())
        .where(GroupMember.group_id.in_(list(group_ids)))
        .group_by(GroupMember.group_id)
    )
    return {group_id: int(count) for group_id, count in (await session.execute(statement)).all()}


async def add_group(session: AsyncSession, group: Group) -> None:
    session.add(group)


async def remove_group(session: AsyncSession, group: Group) -> None:
    await session.delete(group)
    await session.flush()


async def group_members_page(
    session: AsyncSession, group_id: uuid.UUID, page: PageParams
) -> tuple[Sequence[User], int]:
    statement = (
        select(User)
        .join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group_id, User.deleted_at.is_(None))
        .order_by(User.email)
    )
    return await paginate(session, statement, page)


async def live_user(session: AsyncSession, user_id: uuid.UUID) -> User | None:
    user = await session.get(User, user_id)
    return user if user is not None and user.deleted_at is None else None


async def put_in_group(session: AsyncSession, group_id: uuid.UUID, user_id: uuid.UUID) -> None:
    await session.execute(
        insert(GroupMember).values(group_id=group_id, user_id=user_id).on_conflict_do_nothing()
    )


async def take_from_group(session: AsyncSession, group_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    removed = await session.execute(
        delete(GroupMember).where(GroupMember.group_id == group_id, GroupMember.user_id == user_id)
    )
    return bool(removed.rowcount)  # type: ignore[attr-defined]
