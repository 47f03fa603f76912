"""Per-user quotas: model tokens per UTC day and bytes of stored files.

A user's own limit (set by an administrator) wins over the server's default (`QUOTA_*`);
0 means no limit. Tokens are counted from the `response_generated` events every answer path
records (chat messages, `/v1` with documents, `/v1` pass-through), whose counts already sum
every model call of the answer. The check comes before an answer starts, so the answer that
crosses the limit finishes and the next one is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.config import QuotaSettings
from docchat.db import utcnow
from docchat.events.models import Event
from docchat.events.service import RESPONSE_GENERATED
from docchat.kit.errors import TooManyRequests
from docchat.quotas.schemas import QuotaUsage
from docchat.users.models import User

MEGABYTE = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    daily_tokens: int | None  # None: no limit
    storage_bytes: int | None


def _effective(own: int | None, default: int) -> int | None:
    value = default if own is None else own
    return value or None


def limits_for(user: User, settings: QuotaSettings) -> Limits:
    storage_mb = _effective(user.storage_limit_mb, settings.storage_mb)
    return Limits(
        daily_tokens=_effective(user.daily_token_limit, settings.daily_tokens),
        storage_bytes=storage_mb * MEGABYTE if storage_mb else None,
    )


def _day_bounds(now: datetime) -> tuple[datetime, datetime]:
    start = datetime.combine(now.date(), time(), tzinfo=now.tzinfo)
    return start, start + timedelta(days=1)


async def tokens_since(session: AsyncSession, user_id: uuid.UUID, since: datetime) -> int:
    prompt = func.coalesce(Event.payload["prompt_tokens"].as_integer(), 0)
    completion = func.coalesce(Event.payload["completion_tokens"].as_integer(), 0)
    statement = select(func.coalesce(func.sum(prompt + completion), 0)).where(
        Event.user_id == user_id, Event.type == RESPONSE_GENERATED, Event.created_at >= since
    )
    return int((await session.execute(statement)).scalar_one())


async def usage(
    session: AsyncSession,
    user: User,
    settings: QuotaSettings,
    *,
    stored_bytes: int,
    max_upload_bytes: int,
) -> QuotaUsage:
    limits = limits_for(user, settings)
    start, resets_at = _day_bounds(utcnow())
    return QuotaUsage(
        tokens_today=await tokens_since(session, user.id, start),
        daily_token_limit=limits.daily_tokens,
        tokens_reset_at=resets_at,
        stored_bytes=stored_bytes,
        storage_limit_bytes=limits.storage_bytes,
        max_upload_bytes=max_upload_bytes,
    )


async def ensure_tokens_left(session: AsyncSession, user: User, settings: QuotaSettings) -> None:
    """Refuse (429, Retry-After: seconds to the next UTC day) once today's tokens are spent."""
    limit = limits_for(user, settings).daily_tokens
    if limit is None:
        return
    now = utcnow()
    start, resets_at = _day_bounds(now)
    used = await tokens_since(session, user.id, start)
    if used >= limit:
        wait = max(1, int((resets_at - now).total_seconds()) + 1)
        raise TooManyRequests(
            f"Daily token quota reached ({used:,} of {limit:,} tokens used today); it resets "
            f"at {resets_at:%H:%M} UTC. An administrator can raise your limit",
            headers={"Retry-After": str(wait)},
        )


def ensure_room_for(
    user: User, settings: QuotaSettings, *, stored: int, incoming_bytes: int
) -> None:
    """Refuse (429) an upload that would take the user's stored files (`stored` bytes) over the
    quota. There is no Retry-After: room comes back only when documents are deleted or the
    limit is raised."""
    limit = limits_for(user, settings).storage_bytes
    if limit is None:
        return
    if stored + incoming_bytes > limit:
        raise TooManyRequests(
            f"Storage quota exceeded: this file ({incoming_bytes / MEGABYTE:.1f} MB) does not fit "
            f"in what is left of your {limit / MEGABYTE:.0f} MB ({stored / MEGABYTE:.1f} MB "
            "used). Delete documents or ask an administrator for more room"
        )
