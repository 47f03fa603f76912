"""Where a chunk is in a file without pages (a slide, a sheet's rows, a heading path), kept
beside its page so sources can cite it

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 07:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable, no default: adding it rewrites nothing, however many chunks there are.
    op.add_column("document_chunks", sa.Column("location", sa.String(300), nullable=True))


def downgrade() -> None:
    op.drop_column("document_chunks", "location")
