"""Answer settings per chat: its model and strict (documents-only) mode

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 13:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable, no default (null: the server's default): nothing is rewritten.
    op.add_column("chats", sa.Column("model", sa.String(200)))
    op.add_column("chats", sa.Column("strict", sa.Boolean()))


def downgrade() -> None:
    op.drop_column("chats", "strict")
    op.drop_column("chats", "model")
