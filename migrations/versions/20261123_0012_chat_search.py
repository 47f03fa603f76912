"""Chat search: a full-text index over message text

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 12:30:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every message is read to build it: concurrently, so chats keep being written meanwhile
    # (see "Writing a migration" in the development docs).
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY ix_messages_content_search ON messages "
            "USING gin (to_tsvector('english'::regconfig, content))"
        )


def downgrade() -> None:
    op.drop_index("ix_messages_content_search", table_name="messages")
