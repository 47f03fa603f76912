"""Answers in progress: an answer is a row from the moment its question is saved

`messages.status` is `streaming` while the answer is written (its text grows there, so any
API process can show it and a reader can re-attach) and `complete` after; `stop_requested` is
how a Stop sent to one process reaches the process writing the answer. Existing messages are
complete.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-25 21:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "messages",
        sa.Column("status", sa.String(length=16), server_default="complete", nullable=False),
    )
    op.add_column(
        "messages",
        sa.Column("stop_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.create_index(
        "ix_messages_streaming",
        "messages",
        ["updated_at"],
        postgresql_where=sa.text("status = 'streaming'"),
    )


def downgrade() -> None:
    op.drop_index("ix_messages_streaming", table_name="messages")
    op.drop_column("messages", "stop_requested")
    op.drop_column("messages", "status")
