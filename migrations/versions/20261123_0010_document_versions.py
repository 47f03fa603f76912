"""New versions of a document: the version that answers, and new files read beside it

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 11:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A constant default: PostgreSQL adds it without rewriting the table.
    op.add_column(
        "documents", sa.Column("version", sa.Integer(), server_default="1", nullable=False)
    )
    op.add_column("documents", sa.Column("versioned_at", sa.DateTime(timezone=True)))
    op.create_table(
        "document_versions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("document_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("content_type", sa.String(100), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("storage_key", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("chunk_count", sa.Integer()),
        sa.Column("chunks_done", sa.Integer(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_document_versions_document_id", "document_versions", ["document_id"])
    op.create_index("ix_document_versions_created_at", "document_versions", ["created_at"])
    op.add_column("ingestion_jobs", sa.Column("version_id", sa.Uuid()))
    op.create_foreign_key(
        "fk_ingestion_jobs_version_id_document_versions",
        "ingestion_jobs",
        "document_versions",
        ["version_id"],
        ["id"],
        ondelete="CASCADE",
    )


def downgrade() -> None:
    op.drop_constraint(
        "fk_ingestion_jobs_version_id_document_versions", "ingestion_jobs", type_="foreignkey"
    )
    op.drop_column("ingestion_jobs", "version_id")
    op.drop_table("document_versions")
    op.drop_column("documents", "versioned_at")
    op.drop_column("documents", "version")
