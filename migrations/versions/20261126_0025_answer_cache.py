"""Answer cache: model answers kept for reuse when everything that reached the model recurs

Off by default (`RAG_ANSWER_CACHE`). Rows expire after `RAG_ANSWER_CACHE_SECONDS` and are
removed as new ones are written.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-26 10:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "answer_cache",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("context_key", sa.LargeBinary(32), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("normalised", sa.Text(), nullable=False),
        sa.Column("vector", postgresql.ARRAY(sa.REAL()), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("hits", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_cache")),
    )
    op.create_index(
        "ix_answer_cache_context_key_created_at", "answer_cache", ["context_key", "created_at"]
    )
    op.create_index("ix_answer_cache_created_at", "answer_cache", ["created_at"])


def downgrade() -> None:
    op.drop_table("answer_cache")
