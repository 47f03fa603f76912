"""Chat history: a chat's own history length and its running summary

`chats.history_pairs` is how many earlier exchanges the chat's questions remember (null: the
server's `RAG_MAX_HISTORY_PAIRS`). `chats.summary` folds the exchanges before those into a
running summary, made in the background after an answer; `summary_through_seq` is the last
message it covers (0: none), so the next fold adds only what fell out of the window since.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26 09:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns and a constant default: no table rewrite on PostgreSQL 11+.
    op.add_column("chats", sa.Column("history_pairs", sa.Integer(), nullable=True))
    op.add_column("chats", sa.Column("summary", sa.Text(), nullable=True))
    op.add_column(
        "chats",
        sa.Column("summary_through_seq", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.add_column(
        "chats", sa.Column("summary_updated_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    for column in ("summary_updated_at", "summary_through_seq", "summary", "history_pairs"):
        op.drop_column("chats", column)
