"""collections of documents shared with users and groups; groups; chats linked to collections

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 23:00:00+00:00

The built-in collection "Everyone" is a row with a fixed id; its documents are the documents
shared with everyone (`visibility = 'shared'`), as before.
"""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVERYONE_ID = "00000000-0000-0000-0000-00000000e0e0"


def _timestamps() -> list[sa.Column[sa.DateTime]]:
    return [
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
    ]


def _created_at() -> sa.Column[sa.DateTime]:
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_groups"),
    )
    op.create_index("ix_groups_created_at", "groups", ["created_at"])
    op.create_index("uq_groups_name_lower", "groups", [sa.text("lower(name)")], unique=True)
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        _created_at(),
        sa.ForeignKeyConstraint(
            ["group_id"], ["groups.id"], name="fk_group_members_group_id_groups", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_group_members_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("group_id", "user_id", name="pk_group_members"),
    )
    op.create_index("ix_group_members_user_id", "group_members", ["user_id"])

    op.create_table(
        "collections",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        *_timestamps(),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_collections"),
    )
    op.create_index("ix_collections_created_at", "collections", ["created_at"])
    op.create_table(
        "collection_members",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("collection_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("group_id", sa.Uuid(), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        _created_at(),
        sa.CheckConstraint(
            "(user_id IS NULL) <> (group_id IS NULL)",
            name="ck_collection_members_user_or_group",
        ),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name="fk_collection_members_collection_id_collections",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["groups.id"],
            name="fk_collection_members_group_id_groups",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_collection_members_user_id_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_collection_members"),
    )
    op.create_index(
        "uq_collection_members_user",
        "collection_members",
        ["collection_id", "user_id"],
        unique=True,
    )
    op.create_index(
        "uq_collection_members_group",
        "collection_members",
        ["collection_id", "group_id"],
        unique=True,
    )
    op.create_index("ix_collection_members_user_id", "collection_members", ["user_id"])
    op.create_index("ix_collection_members_group_id", "collection_members", ["group_id"])
    op.create_table(
        "collection_documents",
        sa.Column("collection_id", sa.Uuid(), nullable=False),
        sa.Column("document_id", sa.Uuid(), nullable=False),
        sa.Column("added_by", sa.Uuid(), nullable=True),
        _created_at(),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name="fk_collection_documents_collection_id_collections",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name="fk_collection_documents_document_id_documents",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("collection_id", "document_id", name="pk_collection_documents"),
    )
    op.create_index("ix_collection_documents_document_id", "collection_documents", ["document_id"])
    op.create_table(
        "chat_collections",
        sa.Column("chat_id", sa.Uuid(), nullable=False),
        sa.Column("collection_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_id"], ["chats.id"], name="fk_chat_collections_chat_id_chats", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collections.id"],
            name="fk_chat_collections_collection_id_collections",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chat_id", "collection_id", name="pk_chat_collections"),
    )
    op.create_index("ix_chat_collections_collection_id", "chat_collections", ["collection_id"])
    collections = sa.table(
        "collections",
        sa.column("id", sa.Uuid()),
        sa.column("name", sa.String()),
        sa.column("description", sa.String()),
    )
    op.bulk_insert(
        collections,
        [
            {
                "id": uuid.UUID(EVERYONE_ID),
                "name": "Everyone",
                "description": "Documents an administrator shared with every user",
            }
        ],
    )


def downgrade() -> None:
    op.drop_table("chat_collections")
    op.drop_table("collection_documents")
    op.drop_table("collection_members")
    op.drop_table("collections")
    op.drop_table("group_members")
    op.drop_table("groups")
