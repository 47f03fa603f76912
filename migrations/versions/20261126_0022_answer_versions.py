"""Answer versions: a regenerated answer keeps the earlier ones

`messages.superseded_by_id` points an earlier version of an answer at the answer that
replaced it (the latest); those rows are no longer part of the conversation. Deleting the
latest answer deletes its earlier versions.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 00:20:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("superseded_by_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        "fk_messages_superseded_by_id_messages",
        "messages",
        "messages",
        ["superseded_by_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index(
        "ix_messages_superseded_by_id",
        "messages",
        ["superseded_by_id"],
        postgresql_where=sa.text("superseded_by_id IS NOT NULL"),
    )


def downgrade() -> None:
    # The earlier versions are not part of any conversation: they go with the column.
    op.execute("DELETE FROM messages WHERE superseded_by_id IS NOT NULL")
    op.drop_index("ix_messages_superseded_by_id", table_name="messages")
    op.drop_constraint("fk_messages_superseded_by_id_messages", "messages", type_="foreignkey")
    op.drop_column("messages", "superseded_by_id")
