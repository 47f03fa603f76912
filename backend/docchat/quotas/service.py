"""Per-user quotas: model tokens per UTC day and bytes of stored files.

A user's own limit (set by an administrator) wins over the server's default (`QUOTA_*`);
0 means no limit. Tokens are counted from the `response_generated` events every answer path
records (chat messages, `/v1` with documents, `/v1` pass-through), whose counts already sum
every model call of the answer (estimated from the text where the model's server reported
none).

Before an answer starts, `hold_tokens` checks the day's tokens and the ones held by the user's
answers in progress, and holds about one answer's worth more; the hold goes once the answer's
usage is recorded (or it fails). The check and the hold are one step, so parallel requests
cannot all pass before any of them counts: the limit is passed by at most the answer that
crosses it. Uploads check the storage quota the same way (see `documents.service`).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, time, timedelta

import anyio
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import LLMSettings, QuotaSettings, SearchSettings
from docchat.db import advisory_xact_lock, utcnow
from docchat.kit.errors import TooManyRequests
from docchat.kit.tokens import estimate_tokens
from docchat.quotas import repository
from docchat.quotas.models import TokenHold
from docchat.quotas.schemas import QuotaUsage
from docchat.users.models import User

logger = logging.getLogger(__name__)

MEGABYTE = 1024 * 1024
# A hold left behind by a process that died stops counting after this long.
HOLD_LIFETIME = timedelta(minutes=30)
# How soon to try again when the room left is held by answers still being written.
HELD_RETRY_SECONDS = 10


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
        tokens_today=await repository.tokens_since(session, user.id, start),
        daily_token_limit=limits.daily_tokens,
        tokens_reset_at=resets_at,
        stored_bytes=stored_bytes,
        storage_limit_bytes=limits.storage_bytes,
        max_upload_bytes=max_upload_bytes,
    )


def _quota_reached(used: int, held: int, limit: int, now: datetime) -> TooManyRequests:
    if used < limit:
        return TooManyRequests(
            f"Daily token quota: {used:,} of {limit:,} tokens used today and {held:,} held by "
            "your answers in progress; try again when they have finished",
            headers={"Retry-After": str(HELD_RETRY_SECONDS)},
        )
    _, resets_at = _day_bounds(now)
    wait = max(1, int((resets_at - now).total_seconds()) + 1)
    return TooManyRequests(
        f"Daily token quota reached ({used:,} of {limit:,} tokens used today); it resets "
        f"at {resets_at:%H:%M} UTC. An administrator can raise your limit",
        headers={"Retry-After": str(wait)},
    )


def answer_tokens(question: str, search: SearchSettings, llm: LLMSettings) -> int:
    """What an answer over documents costs at most, about: its question, a full context of
    passages and a full answer (the history is usually less than the context's margin)."""
    return estimate_tokens(question) + search.max_context_tokens + llm.max_tokens


@dataclass
class Hold:
    """Tokens held for one answer; `release` once its usage is recorded or it failed."""

    sessionmaker: async_sessionmaker[AsyncSession] | None = None
    hold_id: uuid.UUID | None = None

    async def release(self) -> None:
        """Idempotent, and done even while the caller is being cancelled (a reader who went
        away); a hold that cannot be removed stops counting when it expires."""
        if self.sessionmaker is None or self.hold_id is None:
            return
        hold_id, self.hold_id = self.hold_id, None
        with anyio.CancelScope(shield=True):
            try:
                async with self.sessionmaker() as session:
                    await repository.delete_hold(session, hold_id)
                    await session.commit()
            except Exception:
                logger.warning("token hold %s was not released; it expires by itself", hold_id)


async def hold_tokens(
    session: AsyncSession,
    user: User,
    settings: QuotaSettings,
    *,
    tokens: int,
    release_with: async_sessionmaker[AsyncSession],
) -> Hold:
    """Refuse (429) once today's tokens, with those held by answers in progress, reach the
    limit; otherwise hold `tokens` (about one answer's worth) for the answer about to start.

    Runs at the start of a request, in its session, and commits it: the check and the hold
    are one transaction under the user's lock, and taking a second connection here would let
    a burst of requests wait on the pool for connections the burst itself holds."""
    limit = limits_for(user, settings).daily_tokens
    if limit is None:
        return Hold()
    now = utcnow()
    start, _ = _day_bounds(now)
    await advisory_xact_lock(session, f"token-quota:{user.id}")
    await repository.delete_expired_holds(session, user.id, now)
    used = await repository.tokens_since(session, user.id, start)
    held = await repository.tokens_held(session, user.id, now)
    if used + held >= limit:
        await session.rollback()
        raise _quota_reached(used, held, limit, now)
    hold = TokenHold(user_id=user.id, tokens=tokens, expires_at=now + HOLD_LIFETIME)
    repository.add_hold(session, hold)
    await session.commit()
    return Hold(release_with, hold.id)


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
