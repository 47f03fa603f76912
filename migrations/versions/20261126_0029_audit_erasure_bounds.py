"""The audit log's one exception, narrowed: an erasure may set an entry's `actor_email` only to a
deleted person's alias (`deleted-user-...`) and its `address` only to nothing; `detail` may
still be rewritten (the names in it are replaced where they stand). Everything else is refused
as before, with the setting on or off.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-26 23:30:00+00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NARROW = """
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
        AND (NEW.actor_email IS NOT DISTINCT FROM OLD.actor_email
             OR NEW.actor_email LIKE 'deleted-user-%')
        AND (NEW.address IS NOT DISTINCT FROM OLD.address OR NEW.address IS NULL)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END
$$
"""

WIDE = """
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


def upgrade() -> None:
    op.execute(NARROW)


def downgrade() -> None:
    op.execute(WIDE)
