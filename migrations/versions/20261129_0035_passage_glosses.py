"""Chunk index version 3: passages in other languages indexed with their English gloss

A German, French, Spanish or Chinese chunk's BM25 vector now also holds its English gloss,
read as English (`retrieval/passage_glosses.py`). Their rows of an earlier version are written
again from their text by the service when it starts (`ingestion.upgrade`), as German ones of
version 1 were: the partial index over the rows to write again now lists them all.

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-29 23:00:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035"
down_revision: str | None = "0034"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_document_chunks_outdated"
OUTDATED = "index_version < 3 AND language_code IN ('de', 'fr', 'es', 'zh')"
OUTDATED_BEFORE = "index_version < 2 AND language_code = 'de'"


def _rebuild(predicate: str) -> None:
    # Dropped and built concurrently, outside the upgrade's transaction, as 0034's.
    with op.get_context().autocommit_block():
        op.drop_index(INDEX, table_name="document_chunks", postgresql_concurrently=True)
        op.create_index(
            INDEX,
            "document_chunks",
            ["document_id", "chunk_index"],
            postgresql_where=sa.text(predicate),
            postgresql_concurrently=True,
        )


def upgrade() -> None:
    _rebuild(OUTDATED)


def downgrade() -> None:
    _rebuild(OUTDATED_BEFORE)
