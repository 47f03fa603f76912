"""Directory logins: accounts' links to directory entries, and groups the directory keeps

`external_identities` ties an account to the entry that logs in as it (by its stable id);
`groups.source` is "local" for groups administrators fill, "ldap" for those mirrored from the
directory at each member's login.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-26 16:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "external_identities",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(512), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "last_login_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_external_identities_subject",
        "external_identities",
        ["provider", "subject"],
        unique=True,
    )
    op.create_index("ix_external_identities_user_id", "external_identities", ["user_id"])
    op.add_column(
        "groups", sa.Column("source", sa.String(16), server_default="local", nullable=False)
    )


def downgrade() -> None:
    op.drop_column("groups", "source")
    op.drop_index("ix_external_identities_user_id", table_name="external_identities")
    op.drop_index("uq_external_identities_subject", table_name="external_identities")
    op.drop_table("external_identities")
