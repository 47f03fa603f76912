"""Chunk languages: each chunk is indexed for BM25 in its own language

`document_chunks.language` is the PostgreSQL text search configuration the chunk's `tsv` was
made with (german, french, simple for Chinese, ...). Rows written before have none: they were
made with the installation's configured language (`RAG_LEXICAL_LANGUAGE`), which is what a
missing value means; `docchat reindex` analyses them again.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26 06:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # No default and no rewrite: adding a nullable column is instant on a large table.
    op.add_column("document_chunks", sa.Column("language", sa.String(32), nullable=True))


def downgrade() -> None:
    op.drop_column("document_chunks", "language")
