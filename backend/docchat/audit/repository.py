"""All SQL of the audit log: entries added, found by the person they name, and rewritten
when that person's account is deleted (the one change the append-only trigger lets through)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import String, cast, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.kit.matching import contains


def add(session: AsyncSession, entry: AuditEntry) -> None:
    session.add(entry)


async def entries_naming(
    session: AsyncSession, user_id: uuid.UUID, email: str
) -> Sequence[AuditEntry]:
    """Entries by or about the account, or carrying its (lowercase) address anywhere."""
    statement = select(AuditEntry).where(
        or_(
            AuditEntry.actor_id == user_id,
            AuditEntry.target_id == str(user_id),
            func.lower(AuditEntry.actor_email) == email,
            contains(cast(AuditEntry.detail, String), email),
        )
    )
    return (await session.execute(statement)).scalars().all()


async def rewrite_entries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Write each row's actor_email, address and detail over the entry of its id, with the
    trigger's leave asked for and given back inside this transaction."""
    await session.execute(text("SELECT set_config('docchat.audit_erasure', 'on', true)"))
    # One statement for them all (by primary key, executemany), not one round trip each.
    await session.execute(update(AuditEntry).execution_options(synchronize_session=False), rows)
    await session.execute(text("SELECT set_config('docchat.audit_erasure', 'off', true)"))
