"""fair ingestion: jobs know their document's owner; documents wait as `queued`

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 13:00:00+00:00

Workers take turns between owners, so one user's bulk upload no longer holds back everyone
else's documents; a document waiting for a worker shows as `queued` with its position.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ingestion_jobs", sa.Column("owner_id", sa.Uuid(), nullable=True))
    op.execute(
        "UPDATE ingestion_jobs j SET owner_id = d.owner_id FROM documents d "
        "WHERE d.id = j.document_id"
    )
    op.alter_column("ingestion_jobs", "owner_id", nullable=False)
    op.create_foreign_key(
        "fk_ingestion_jobs_owner_id_users",
        "ingestion_jobs",
        "users",
        ["owner_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index(
        "ix_ingestion_jobs_owner_status", "ingestion_jobs", ["owner_id", "status", "available_at"]
    )
    op.create_index(
        "ix_ingestion_jobs_owner_claimed_at", "ingestion_jobs", ["owner_id", "claimed_at"]
    )
    # Documents no worker has started yet are waiting.
    op.execute(
        "UPDATE documents d SET status = 'queued' WHERE d.status = 'processing' "
        "AND NOT EXISTS (SELECT 1 FROM ingestion_jobs j "
        "WHERE j.document_id = d.id AND j.status = 'running')"
    )


def downgrade() -> None:
    op.execute("UPDATE documents SET status = 'processing' WHERE status = 'queued'")
    op.drop_index("ix_ingestion_jobs_owner_claimed_at", table_name="ingestion_jobs")
    op.drop_index("ix_ingestion_jobs_owner_status", table_name="ingestion_jobs")
    op.drop_constraint("fk_ingestion_jobs_owner_id_users", "ingestion_jobs", type_="foreignkey")
    op.drop_column("ingestion_jobs", "owner_id")
