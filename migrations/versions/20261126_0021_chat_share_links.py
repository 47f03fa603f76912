"""Chats shared read-only by link inside the installation

`chats.share_id` is the link's secret id (unique; null: not shared), `shared_at` when it was
made or last updated, `shared_through_seq` the last message the link shows.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 00:10:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("chats", sa.Column("share_id", sa.Uuid(), nullable=True))
    op.add_column("chats", sa.Column("shared_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("chats", sa.Column("shared_through_seq", sa.BigInteger(), nullable=True))
    op.create_unique_constraint("uq_chats_share_id", "chats", ["share_id"])


def downgrade() -> None:
    op.drop_constraint("uq_chats_share_id", "chats", type_="unique")
    op.drop_column("chats", "shared_through_seq")
    op.drop_column("chats", "shared_at")
    op.drop_column("chats", "share_id")
