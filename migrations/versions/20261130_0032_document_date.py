"""Documents' own dates: what the file says (PDF, Office, OpenDocument, EPUB, HTML), else
when its synced source last changed it; the model sees it with each passage

Nullable and empty for the documents stored so far (their files are not read again for it):
a document gets its date when it is next read, or a new version of it is.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-30 09:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("documents", sa.Column("document_date", sa.Date(), nullable=True))
    op.add_column("document_versions", sa.Column("document_date", sa.Date(), nullable=True))


def downgrade() -> None:
    op.drop_column("document_versions", "document_date")
    op.drop_column("documents", "document_date")
