"""Single sign-on codes redeemed in the last minute, so that a second return with the same
code (a browser requesting the callback twice) gets the first one's outcome

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29 02:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sso_redeemed_codes",
        sa.Column("code_digest", sa.String(64), nullable=False),
        sa.Column("state_digest", sa.String(64), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("reason", sa.String(500), server_default="", nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("code_digest"),
    )
    op.create_index("ix_sso_redeemed_codes_created_at", "sso_redeemed_codes", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_sso_redeemed_codes_created_at", table_name="sso_redeemed_codes")
    op.drop_table("sso_redeemed_codes")
