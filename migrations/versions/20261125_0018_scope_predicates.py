"""Indexes for scopes as predicates and a queue claim that does not grow with the backlog

- `collection_documents.owner_id`: the document's owner, so that the owners of a collection's
  documents are found by walking an index `(collection_id, owner_id)` from one owner to the
  next, whatever the number of documents (`documents.scopes`).
- `ix_documents_shared_owner`: the same walk over the documents shared with everyone.
- `ix_ingestion_jobs_queued`: each owner's queue in order, queued jobs only, so that the claim
  reads the owners with work waiting and the head of each queue, not every queued job; and
  `ix_ingestion_jobs_running` for each owner's running jobs. They replace
  `ix_ingestion_jobs_owner_status`, which a fresh database's planner (no statistics yet) took
  for the head of a queue, reading and sorting the owner's whole backlog.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25 11:20:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("collection_documents", sa.Column("owner_id", sa.Uuid()))
    op.execute(
        "UPDATE collection_documents cd SET owner_id = d.owner_id "
        "FROM documents d WHERE d.id = cd.document_id"
    )
    op.alter_column("collection_documents", "owner_id", nullable=False)
    op.create_foreign_key(
        op.f("fk_collection_documents_owner_id_users"),
        "collection_documents",
        "users",
        ["owner_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index(
        "ix_collection_documents_collection_owner",
        "collection_documents",
        ["collection_id", "owner_id"],
    )
    op.create_index(
        "ix_documents_shared_owner",
        "documents",
        ["owner_id"],
        postgresql_where=sa.text(
            "visibility = 'shared' AND status = 'completed' AND deleted_at IS NULL"
        ),
    )
    op.create_index(
        "ix_ingestion_jobs_queued",
        "ingestion_jobs",
        ["owner_id", "available_at", "created_at", "id"],
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.create_index(
        "ix_ingestion_jobs_running",
        "ingestion_jobs",
        ["owner_id"],
        postgresql_where=sa.text("status = 'running'"),
    )
    op.drop_index("ix_ingestion_jobs_owner_status", table_name="ingestion_jobs")


def downgrade() -> None:
    op.create_index(
        "ix_ingestion_jobs_owner_status", "ingestion_jobs", ["owner_id", "status", "available_at"]
    )
    op.drop_index("ix_ingestion_jobs_running", table_name="ingestion_jobs")
    op.drop_index("ix_ingestion_jobs_queued", table_name="ingestion_jobs")
    op.drop_index("ix_documents_shared_owner", table_name="documents")
    op.drop_index("ix_collection_documents_collection_owner", table_name="collection_documents")
    op.drop_constraint(
        op.f("fk_collection_documents_owner_id_users"), "collection_documents", type_="foreignkey"
    )
    op.drop_column("collection_documents", "owner_id")
