"""BM25 reads only the chunks holding the question's words: a GIN index over `tsv`, each
document's word total for the scope's statistics, and ANALYZE keeping the 10,000 most common
lexemes of `tsv` (which words are too common to pick candidates in a wide scope)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 23:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("documents", sa.Column("token_count", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE documents d SET token_count = t.total FROM ("
        "SELECT document_id, sum(tokens) AS total FROM document_chunks GROUP BY document_id"
        ") t WHERE t.document_id = d.id"
    )
    # The chunk table is the largest: building its index concurrently (outside the upgrade's
    # transaction, which is committed up to here) lets an installation upgraded from 0007 keep
    # taking uploads while it builds (minutes at a million chunks) instead of locking writes.
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_document_chunks_tsv",
            "document_chunks",
            ["tsv"],
            postgresql_using="gin",
            postgresql_concurrently=True,
        )
    op.execute("ALTER TABLE document_chunks ALTER COLUMN tsv SET STATISTICS 1000")


def downgrade() -> None:
    op.execute("ALTER TABLE document_chunks ALTER COLUMN tsv SET STATISTICS -1")
    op.drop_index("ix_document_chunks_tsv", table_name="document_chunks")
    op.drop_column("documents", "token_count")
