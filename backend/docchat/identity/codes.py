"""The single sign-on codes this server redeemed in the last minute (in the database, so that
every API process sees them): the first return of a code takes it to the provider; a second
return of the same code, from the browser that started that sign-in, gets the first one's
outcome instead of spending the code again (which the provider refuses, and may answer by
revoking what the first return was given)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.identity import repository

REPLAY_WINDOW = timedelta(seconds=60)
POLL_SECONDS = 0.1
# The longest a second return waits for the first one's outcome, whatever the provider's own
# time limits add up to.
MAX_WAIT_SECONDS = 15.0
SIGNED_IN = "signed_in"
REFUSED = "refused"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class Outcome:
    kind: str  # SIGNED_IN, REFUSED or UNAVAILABLE
    reason: str  # why it was refused
    user_id: uuid.UUID | None  # who signed in


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


async def claim(session: AsyncSession, code: str, state: str) -> bool:
    """True for the first return of this code (it goes to the provider), False when another
    request brought it already. Committed at once: the others must see it while this one
    waits for the provider. Codes older than the window are forgotten here."""
    await repository.forget_codes_before(session, utcnow() - REPLAY_WINDOW)
    first = await repository.add_code(session, _digest(code), _digest(state), utcnow())
    await session.commit()
    return first


async def settle(
    session: AsyncSession,
    code: str,
    kind: str,
    user_id: uuid.UUID | None = None,
    reason: str = "",
) -> None:
    """The first return's outcome (committed with the rest of its request)."""
    await repository.set_code_outcome(session, _digest(code), kind, user_id, reason[:500])


async def outcome_of(
    session: AsyncSession, code: str, state: str, wait_seconds: float
) -> Outcome | None:
    """The outcome of this code's first return, waiting for it while that return is at the
    provider. None when the code came back with another sign-in's state (someone else's
    browser), is older than the window, or has no outcome within `wait_seconds`."""
    deadline = time.monotonic() + min(wait_seconds, MAX_WAIT_SECONDS)
    while True:
        row = await repository.redeemed_code(session, _digest(code))
        if row is None or not hmac.compare_digest(row.state_digest, _digest(state)):
            return None
        if row.created_at < utcnow() - REPLAY_WINDOW:
            return None
        if row.outcome is not None:
            return Outcome(row.outcome, row.reason, row.user_id)
        if time.monotonic() >= deadline:
            return None
        # Between two looks the transaction ends and the connection goes back to the pool: a
        # waiting return holds none (many of them at once would take the pool), and the next
        # statement sees what was committed since.
        await session.rollback()
        await asyncio.sleep(POLL_SECONDS)
