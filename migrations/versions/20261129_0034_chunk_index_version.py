"""Chunk index versions: German chunks indexed with their compounds' parts

`document_chunks.index_version` says how a row's BM25 vector was written: 1 before this
revision, 2 since, where a German chunk's vector also holds the parts of its compounds
("Baumeister": "Bau", "Meister"; `retrieval/compounds.py`). The rows of other languages are
written the same way in both. German rows of version 1 are written again from their text by the
service when it starts (`ingestion.upgrade`, or `docchat reindex --layout-only` at once); the
partial index lists them, and is empty once they are done.

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-29 20:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0034"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OUTDATED = "index_version < 2 AND language_code = 'de'"


def upgrade() -> None:
    # A constant default: instant on a large table (no rewrite, PostgreSQL 11 and later).
    op.add_column(
        "document_chunks",
        sa.Column("index_version", sa.SmallInteger(), nullable=False, server_default="1"),
    )
    # Built concurrently (outside the upgrade's transaction, committed up to here), as 0033's.
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_document_chunks_outdated",
            "document_chunks",
            ["document_id", "chunk_index"],
            postgresql_where=sa.text(OUTDATED),
            postgresql_concurrently=True,
        )


def downgrade() -> None:
    op.drop_index("ix_document_chunks_outdated", table_name="document_chunks")
    op.drop_column("document_chunks", "index_version")
