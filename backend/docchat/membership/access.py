"""Who belongs to which collection, directly or through groups: the SQL that
`documents.repository.readable_by` (every document read) builds on.

Each question reads membership afresh (no cache), so a member removed or a document taken out
of a collection is out of the scope of the very next question.
"""

from __future__ import annotations

import uuid

from sqlalchemy import ColumnElement, Select, SQLColumnExpression, or_, select

from docchat.membership.models import (
    EVERYONE_ID,
    Collection,
    CollectionDocument,
    CollectionMember,
    CollectionRole,
    GroupMember,
)
from docchat.users.models import User

# A user id, or a bound parameter standing for one in a statement built once and reused.
UserId = uuid.UUID | ColumnElement[uuid.UUID]


def memberships(user_id: UserId) -> Select[CollectionMember]:
    """The user's memberships: their own (once accepted), and those of their groups."""
    groups = select(GroupMember.group_id).where(GroupMember.user_id == user_id)
    return select(CollectionMember).where(
        CollectionMember.accepted_at.is_not(None),
        or_(CollectionMember.user_id == user_id, CollectionMember.group_id.in_(groups)),
    )


def member_collection_ids(user_id: UserId) -> Select[tuple[uuid.UUID]]:
    found = memberships(user_id).subquery()
    return select(found.c.collection_id)


def shared_document_ids(user_id: UserId) -> Select[uuid.UUID]:
    """Documents that reach the user through a live collection they (or a group) belong to."""
    return (
        select(CollectionDocument.document_id)
        .join(Collection, Collection.id == CollectionDocument.collection_id)
        .where(
            Collection.deleted_at.is_(None),
            CollectionDocument.collection_id.in_(member_collection_ids(user_id)),
        )
    )


def readable_collections(user: User) -> Select[Collection]:
    """Live collections the user may see: Everyone, and those they (or a group) belong to."""
    return select(Collection).where(
        Collection.deleted_at.is_(None),
        or_(Collection.id == EVERYONE_ID, Collection.id.in_(member_collection_ids(user.id))),
    )


def others_in(
    collection_id: SQLColumnExpression[uuid.UUID], user_id: UserId
) -> ColumnElement[bool]:
    """Someone besides the user reads the collection: another person (once accepted) or a
    group (whoever is in it)."""
    return (
        select(CollectionMember.id)
        .where(
            CollectionMember.collection_id == collection_id,
            CollectionMember.accepted_at.is_not(None),
            or_(CollectionMember.group_id.is_not(None), CollectionMember.user_id != user_id),
        )
        .exists()
    )


def solely_owned(user_id: UserId) -> Select[Collection]:
    """Live collections the user owns and no one else does (no other person, no group)."""
    mine = select(CollectionMember.collection_id).where(
        CollectionMember.user_id == user_id, CollectionMember.role == CollectionRole.owner
    )
    other_owner = (
        select(CollectionMember.id)
        .where(
            CollectionMember.collection_id == Collection.id,
            CollectionMember.role == CollectionRole.owner,
            or_(CollectionMember.group_id.is_not(None), CollectionMember.user_id != user_id),
        )
        .exists()
    )
    return select(Collection).where(
        Collection.deleted_at.is_(None),
        Collection.id != EVERYONE_ID,
        Collection.id.in_(mine),
        ~other_owner,
    )
