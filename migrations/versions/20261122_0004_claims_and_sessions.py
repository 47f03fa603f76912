"""job claims with heartbeats and fencing tokens; a session generation per user

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 12:00:00+00:00

`ingestion_jobs.claim_token` names the one worker allowed to write a job's results;
`heartbeat_at` shows that it is alive, so a dead worker's job is taken again within seconds.
`users.session_generation` is carried by every token: raising it ends every session at once.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ingestion_jobs", sa.Column("claim_token", sa.Uuid(), nullable=True))
    op.add_column(
        "ingestion_jobs", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column(
        "users",
        sa.Column("session_generation", sa.Integer(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("users", "session_generation")
    op.drop_column("ingestion_jobs", "heartbeat_at")
    op.drop_column("ingestion_jobs", "claim_token")
