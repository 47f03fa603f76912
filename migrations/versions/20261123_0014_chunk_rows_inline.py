"""Chunk rows keep their word vector in the row: BM25 reads `tsv` for every candidate chunk,
and out of line each read was one more lookup in the TOAST table

Rows of up to 4,080 bytes stay whole (a 1,000-character chunk and its `tsv` are about
2.4 KB); rows written before this keep their layout until the document is reprocessed.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23 14:10:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE document_chunks SET (toast_tuple_target = 4080)")


def downgrade() -> None:
    op.execute("ALTER TABLE document_chunks RESET (toast_tuple_target)")
