"""Pinned and archived chats

`chats.pinned_at` puts a chat at the head of its owner's list; `chats.archived_at` takes it
out of the list (search still finds it) until it is unarchived or asked a new question.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 00:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("chats", sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("chats", sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("chats", "archived_at")
    op.drop_column("chats", "pinned_at")
