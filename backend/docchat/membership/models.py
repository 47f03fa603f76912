"""Sharing: groups of users, and collections of documents shared with users and groups."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, func
from sqlalchemy.orm import Mapped, mapped_column

from docchat.db import Base, IdMixin, SoftDeleteMixin, TimestampMixin, utcnow

# The built-in collection "Everyone" (a row made by the migration): every user is a viewer and
# administrators are editors; its documents are those whose `visibility` is `shared`, so it has
# no rows in collection_documents and no members.
EVERYONE_ID = uuid.UUID("00000000-0000-0000-0000-00000000e0e0")
# A group whose members administrators choose (the others mirror a directory's).
LOCAL = "local"
# What keeps a mirrored group's members, by its `source` (identity's LDAP and OIDC), in words.
KEPT_BY = {"ldap": "the company directory", "oidc": "the single sign-on provider"}


def kept_by(source: str) -> str:
    """Where the members of a group that is not local come from, as a person reads it."""
    return KEPT_BY.get(source, f"its source ({source})")


class CollectionRole(StrEnum):
    viewer = "viewer"  # reads the documents and asks about them
    editor = "editor"  # also adds and removes documents
    owner = "owner"  # also renames, deletes, and decides who is a member


ROLE_RANK = {CollectionRole.viewer: 1, CollectionRole.editor: 2, CollectionRole.owner: 3}


class Group(IdMixin, TimestampMixin, Base):
    __tablename__ = "groups"
    __table_args__ = (Index("uq_groups_name_lower", func.lower("name"), unique=True),)

    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(String(1000), default="")
    # "local" (administrators decide who is in it) or what does: the company directory ("ldap")
    # or the single sign-on provider ("oidc"); its members are then set at each of their
    # logins, and not edited here.
    source: Mapped[str] = mapped_column(String(16), default=LOCAL, server_default=LOCAL)


class GroupMember(Base):
    __tablename__ = "group_members"
    __table_args__ = (Index("ix_group_members_user_id", "user_id"),)

    group_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())


class Collection(IdMixin, TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "collections"

    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(String(1000), default="")
    created_by: Mapped[uuid.UUID | None] = mapped_column(default=None)


class CollectionMember(IdMixin, Base):
    """A user, a group or an invited address (exactly one of them) and its role in a
    collection. A person added by someone else reads the collection only once they have
    accepted (`accepted_at`); an invitation to an address with no account yet waits for the
    account that signs up with it."""

    __tablename__ = "collection_members"
    __table_args__ = (
        CheckConstraint("num_nonnulls(user_id, group_id, invited_email) = 1", name="one_member"),
        Index("uq_collection_members_user", "collection_id", "user_id", unique=True),
        Index("uq_collection_members_group", "collection_id", "group_id", unique=True),
        Index("uq_collection_members_invited_email", "collection_id", "invited_email", unique=True),
        Index("ix_collection_members_user_id", "user_id"),
        Index("ix_collection_members_group_id", "group_id"),
        Index("ix_collection_members_invited_email", "invited_email"),
    )

    collection_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE")
    )
    user_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), default=None
    )
    group_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("groups.id", ondelete="CASCADE"), default=None
    )
    invited_email: Mapped[str | None] = mapped_column(String(320), default=None)
    role: Mapped[CollectionRole] = mapped_column(String(16))
    added_by: Mapped[uuid.UUID | None] = mapped_column(default=None)
    accepted_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())


class CollectionDocument(Base):
    __tablename__ = "collection_documents"
    __table_args__ = (
        Index("ix_collection_documents_document_id", "document_id"),
        # The owners of a collection's documents, one index step each (`documents.scopes`).
        Index("ix_collection_documents_collection_owner", "collection_id", "owner_id"),
    )

    collection_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True
    )
    document_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    # The document's owner (a document never changes hands).
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    added_by: Mapped[uuid.UUID | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, server_default=func.now())
