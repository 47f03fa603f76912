"""Account deletion: a person's request waits for an administrator, and the audit log may have
a deleted person's name replaced

`users.deletion_requested_at` is set when a person asks to delete an account that holds
documents others read (an administrator then decides what happens to them). The audit log stays
append-only, with one exception: while a transaction has set `docchat.audit_erasure` to `on`
(account deletion does, and nothing else), an UPDATE may change an entry's `actor_email`,
`address` and `detail`, never which action it records, when, by whom (id) or on what. DELETE is
refused as before.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-26 22:30:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ERASABLE = """
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND current_setting('docchat.audit_erasure', true) = 'on'
        AND NEW.id = OLD.id
        AND NEW.created_at = OLD.created_at
        AND NEW.action = OLD.action
        AND NEW.actor_id IS NOT DISTINCT FROM OLD.actor_id
        AND NEW.target_type IS NOT DISTINCT FROM OLD.target_type
        AND NEW.target_id IS NOT DISTINCT FROM OLD.target_id
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END
$$
"""

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END
$$
"""


def upgrade() -> None:
    # Nullable, no default: adding it rewrites nothing and locks `users` for an instant.
    op.add_column(
        "users", sa.Column("deletion_requested_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute(ERASABLE)


def downgrade() -> None:
    op.execute(APPEND_ONLY)
    op.drop_column("users", "deletion_requested_at")
