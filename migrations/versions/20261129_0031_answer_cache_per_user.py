"""Answer cache per person: every cached answer belongs to the user whose question it answered

Until now an entry was found by anyone whose prompt was the same, so a general answer (no
documents) reached other users, with whatever its asker had told the model. The entries kept
so far name no asker and are dropped (they are a cache: the next question asks the model);
the new column is required, and an entry goes with its account.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29 02:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Shared entries are never served again, whoever asks.
    op.execute("DELETE FROM answer_cache")
    op.add_column("answer_cache", sa.Column("user_id", sa.Uuid(), nullable=False))
    op.create_foreign_key(
        op.f("fk_answer_cache_user_id_users"),
        "answer_cache",
        "users",
        ["user_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.drop_index("ix_answer_cache_context_key_created_at", table_name="answer_cache")
    op.create_index(
        "ix_answer_cache_user_id_context_key_created_at",
        "answer_cache",
        ["user_id", "context_key", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_answer_cache_user_id_context_key_created_at", table_name="answer_cache")
    op.create_index(
        "ix_answer_cache_context_key_created_at", "answer_cache", ["context_key", "created_at"]
    )
    op.drop_constraint(op.f("fk_answer_cache_user_id_users"), "answer_cache", type_="foreignkey")
    op.drop_column("answer_cache", "user_id")
