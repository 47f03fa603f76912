"""Token holds: the daily quota counts answers in progress

`token_holds`: tokens set aside for an answer from its start until its usage is recorded, so
parallel requests cannot all pass the quota's check before any of them is counted.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 08:10:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "token_holds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_token_holds_user_id_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_token_holds"),
    )
    op.create_index("ix_token_holds_user_id_expires_at", "token_holds", ["user_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_token_holds_user_id_expires_at", table_name="token_holds")
    op.drop_table("token_holds")
