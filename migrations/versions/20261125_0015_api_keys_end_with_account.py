"""API keys that end with their account's other credentials

`users.keys_revoked_at`: API keys created up to this moment no longer work. Set when an account
is deactivated, or promoted by `docchat create-admin` (someone may have registered the address
first and made a key, waiting for the promotion).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 08:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("users", sa.Column("keys_revoked_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("users", "keys_revoked_at")
