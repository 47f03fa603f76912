"""The audit log: who did what to whom, from where. Services call `record`; nothing edits.

An entry joins the transaction of the action it describes, so it exists exactly when the
action happened. Failed logins are the exception the caller handles: it commits the entry
before answering 401, since that request's transaction is otherwise rolled back.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import repository
from docchat.audit.models import AuditEntry
from docchat.audit.text import audit_detail, audit_text
from docchat.kit.pagination import PageParams, paginate


class AuditAction(StrEnum):
    """The actions recorded; their names are part of the API (the log's filter)."""

    login = "auth.login"
    login_failed = "auth.login_failed"
    password_changed = "auth.password_changed"  # noqa: S105
    # A signed-in person's password, asked again (to change it, to delete the account), wrong.
    password_check_failed = "auth.password_check_failed"  # noqa: S105
    api_key_created = "api_key.created"
    api_key_revoked = "api_key.revoked"
    user_created = "user.created"
    user_linked = "user.linked"  # to a directory entry, which logs in as it from then on
    user_deactivated = "user.deactivated"
    user_reactivated = "user.reactivated"
    user_role_changed = "user.role_changed"
    user_password_reset = "user.password_reset"  # noqa: S105
    user_quota_changed = "user.quota_changed"
    user_exported = "user.exported"  # a person downloaded everything of theirs
    user_deletion_requested = "user.deletion_requested"  # waits for an administrator
    user_deletion_cancelled = "user.deletion_cancelled"
    user_deleted = "user.deleted"  # files, chunks, vectors, keys gone; names replaced here
    document_deleted = "document.deleted"
    chat_deleted = "chat.deleted"
    chat_restored = "chat.restored"
    chat_shared = "chat.shared"
    chat_unshared = "chat.unshared"
    collection_created = "collection.created"
    collection_deleted = "collection.deleted"
    collection_member_added = "collection.member_added"
    collection_member_changed = "collection.member_changed"
    collection_member_removed = "collection.member_removed"
    collection_invitation_accepted = "collection.invitation_accepted"
    collection_invitation_declined = "collection.invitation_declined"
    collection_document_added = "collection.document_added"
    collection_document_removed = "collection.document_removed"
    source_created = "source.created"
    source_changed = "source.changed"
    source_deleted = "source.deleted"
    group_created = "group.created"
    group_deleted = "group.deleted"
    group_member_added = "group.member_added"
    group_member_removed = "group.member_removed"


class Actor(Protocol):
    """Who acted: a user (the audit log depends on no other package)."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def email(self) -> str: ...


# Who acted when it was not a signed-in user (the `docchat users ...` commands).
COMMAND_LINE = "command line"


async def record(
    session: AsyncSession,
    action: AuditAction,
    *,
    actor: Actor | None,
    target: tuple[str, uuid.UUID | str] | None = None,
    address: str | None = None,
    actor_email: str | None = None,
    **detail: Any,
) -> None:
    """Add one entry to the request's transaction. `actor_email` names an actor that is not a
    user (the command line) or one that could not be identified (a failed login's email).

    The email and every string in `detail` are kept as `audit_text`: a user's text cannot
    break a line, reorder what is shown around it or outgrow the column."""
    target_type, target_id = target if target else (None, None)
    email = actor.email if actor else actor_email
    repository.add(
        session,
        AuditEntry(
            action=action,
            actor_id=actor.id if actor else None,
            actor_email=audit_text(email) if email is not None else None,
            target_type=target_type,
            target_id=str(target_id) if target_id is not None else None,
            address=address,
            detail=audit_detail(detail),
        ),
    )
    await session.flush()


def _filtered(
    action: AuditAction | None,
    actor_id: uuid.UUID | None,
    target_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> Select[AuditEntry]:
    statement = select(AuditEntry)
    if action:
        statement = statement.where(AuditEntry.action == action)
    if actor_id:
        statement = statement.where(AuditEntry.actor_id == actor_id)
    if target_id:
        statement = statement.where(AuditEntry.target_id == target_id)
    if since:
        statement = statement.where(AuditEntry.created_at >= since)
    if until:
        statement = statement.where(AuditEntry.created_at < until)
    return statement.order_by(AuditEntry.created_at.desc(), AuditEntry.id)


async def search(
    session: AsyncSession,
    page: PageParams,
    *,
    action: AuditAction | None = None,
    actor_id: uuid.UUID | None = None,
    target_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[Sequence[AuditEntry], int]:
    """Newest first, filtered by whichever of the arguments are given."""
    return await paginate(session, _filtered(action, actor_id, target_id, since, until), page)


def erased_name(user_id: uuid.UUID) -> str:
    """What the audit log calls a person whose account was deleted: stable for one account
    (its entries still read as one person's), naming no one."""
    return f"deleted-user-{user_id.hex[:12]}"


def _replaced(value: Any, names: re.Pattern[str], alias: str) -> Any:
    """`value` with every whole occurrence of the names replaced by `alias`."""
    if isinstance(value, str):
        return names.sub(alias, value)
    if isinstance(value, list):
        return [_replaced(item, names, alias) for item in value]
    if isinstance(value, dict):
        return {key: _replaced(item, names, alias) for key, item in value.items()}
    return value


def _names_pattern(email: str, display_name: str) -> re.Pattern[str]:
    """The address, and the display name when it is long enough to name someone, each as a
    whole (not `ann@x.org` inside `joann@x.org`), in any case."""
    names = [email] + ([display_name.strip()] if len(display_name.strip()) >= 3 else [])
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?<![\w.+-])(?:{alternatives})(?![\w.-]*@|[\w-])", re.IGNORECASE)


async def erase_person(
    session: AsyncSession, user_id: uuid.UUID, email: str, display_name: str = ""
) -> int:
    """Replace a deleted person's email and display name in every entry that carries them
    (their own actions, actions on them, failed logins typed with their address, others'
    invitations naming it) by `erased_name`, and drop the network address of their own
    actions. What happened, when, and the ids stay. Returns how many entries changed.

    The one change the append-only trigger lets through, and only inside this transaction."""
    alias = erased_name(user_id)
    email = email.lower()
    names = _names_pattern(email, display_name)
    entries = await repository.entries_naming(session, user_id, email)
    if not entries:
        return 0
    rows = []
    for entry in entries:
        own = entry.actor_id == user_id or (entry.actor_email or "").lower() == email
        rows.append(
            {
                "id": entry.id,
                "actor_email": alias if own else entry.actor_email,
                "address": None if own else entry.address,
                "detail": _replaced(entry.detail, names, alias),
            }
        )
    await repository.rewrite_entries(session, rows)
    for entry in entries:
        session.expire(entry)
    return len(entries)
