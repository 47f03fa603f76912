"""Collection invitations that wait for consent

- `collection_members.accepted_at`: a person added to a collection by someone else reads it
  only once they accept; memberships that existed before this are taken as accepted.
- `invited_email`: an invitation to an address with no account yet (so adding a member answers
  the same whether or not the address has an account); it waits for the account that signs up
  with it. `added_by`: who sent the invitation.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25 08:20:00+00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The name revision 0007 gave the old constraint (the naming convention was applied twice).
OLD_CHECK = "ck_collection_members_ck_collection_members_user_or_group"


def upgrade() -> None:
    op.add_column("collection_members", sa.Column("accepted_at", sa.DateTime(timezone=True)))
    op.add_column("collection_members", sa.Column("invited_email", sa.String(320)))
    op.add_column("collection_members", sa.Column("added_by", sa.Uuid()))
    op.execute("UPDATE collection_members SET accepted_at = created_at")
    op.drop_constraint(op.f(OLD_CHECK), "collection_members", "check")
    op.create_check_constraint(
        op.f("ck_collection_members_one_member"),
        "collection_members",
        "num_nonnulls(user_id, group_id, invited_email) = 1",
    )
    op.create_index(
        "uq_collection_members_invited_email",
        "collection_members",
        ["collection_id", "invited_email"],
        unique=True,
    )
    op.create_index("ix_collection_members_invited_email", "collection_members", ["invited_email"])


def downgrade() -> None:
    op.execute("DELETE FROM collection_members WHERE invited_email IS NOT NULL")
    op.drop_index("ix_collection_members_invited_email", table_name="collection_members")
    op.drop_index("uq_collection_members_invited_email", table_name="collection_members")
    op.drop_constraint(op.f("ck_collection_members_one_member"), "collection_members", "check")
    op.create_check_constraint(
        op.f(OLD_CHECK), "collection_members", "(user_id IS NULL) <> (group_id IS NULL)"
    )
    op.drop_column("collection_members", "added_by")
    op.drop_column("collection_members", "invited_email")
    op.drop_column("collection_members", "accepted_at")
