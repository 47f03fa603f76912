"""Throttling of password guessing and sign-up floods, in this process.

Failed logins are counted three ways within one window:
- per address and email: one address guessing one account is stopped after a few tries;
- per address: one address guessing many accounts is stopped too;
- per account, from every address: when an account is under a spread-out attack, addresses
  that already failed on it are stopped, but the account is never locked as such, so a
  stranger cannot keep its owner out: a correct password from a clean address still works.
A signed-in person's password asked again (to change it, to delete the account) counts on the
same limiter: one password, whichever door it is guessed at.
Sign-ups are counted per address. With several API replicas each keeps its own counts.
"""

from __future__ import annotations

import math
import time
from collections import deque

from docchat.kit.errors import TooManyRequests

TOO_MANY_LOGINS = "Too many failed logins; try again later"
# Tracked keys beyond which expired ones are swept (bounds memory under rotating addresses).
SWEEP_ABOVE = 50_000


class SlidingWindow:
    """Timestamps of events per key, forgotten `window` seconds after they happened."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._events: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        events = self._events.get(key)
        if events is None:
            return deque()
        while events and events[0] <= now - self.window:
            events.popleft()
        return events

    def count(self, key: str, now: float) -> int:
        return len(self._recent(key, now))

    def retry_after(self, key: str, now: float) -> int:
        events = self._recent(key, now)
        return max(1, math.ceil(events[0] + self.window - now)) if events else 1

    def add(self, key: str, now: float) -> None:
        if len(self._events) > SWEEP_ABOVE:
            self._sweep(now)
        self._events.setdefault(key, deque()).append(now)
        self._recent(key, now)

    def clear(self, key: str) -> None:
        self._events.pop(key, None)

    def _sweep(self, now: float) -> None:
        for key in [key for key in self._events if not self._recent(key, now)]:
            del self._events[key]


def _refuse(message: str, retry_after: int) -> TooManyRequests:
    return TooManyRequests(message, headers={"Retry-After": str(retry_after)})


class LoginLimiter:
    def __init__(
        self,
        max_failures: int,
        window_seconds: int,
        *,
        address_failures: int,
        account_failures: int,
    ) -> None:
        self.max_failures = max_failures
        self.address_failures = address_failures
        self.account_failures = account_failures
        self._failures = SlidingWindow(window_seconds)

    @staticmethod
    def _keys(address: str, email: str) -> tuple[str, str, str]:
        email = email.strip().lower()
        return f"pair|{address}|{email}", f"address|{address}", f"account|{email}"

    def check(self, address: str, email: str, refusal: str = TOO_MANY_LOGINS) -> None:
        """Raise 429 (with Retry-After) when this address should not try this login now."""
        now = time.monotonic()
        pair, by_address, account = self._keys(address, email)
        tried_here = self._failures.count(pair, now)
        blocked = (
            (tried_here >= self.max_failures, pair),
            (self._failures.count(by_address, now) >= self.address_failures, by_address),
            (
                tried_here > 0 and self._failures.count(account, now) >= self.account_failures,
                pair,
            ),
        )
        for refused, key in blocked:
            if refused:
                raise _refuse(refusal, self._failures.retry_after(key, now))

    def failed(self, address: str, email: str) -> None:
        now = time.monotonic()
        for key in self._keys(address, email):
            self._failures.add(key, now)

    def succeeded(self, address: str, email: str) -> None:
        self._failures.clear(self._keys(address, email)[0])


class SignupLimiter:
    """Accounts created per address within the window."""

    def __init__(self, per_address: int, window_seconds: int) -> None:
        self.per_address = per_address
        self._signups = SlidingWindow(window_seconds)

    def check_and_count(self, address: str) -> None:
        now = time.monotonic()
        if self._signups.count(address, now) >= self.per_address:
            raise _refuse(
                "Too many sign-ups from this address; try again later",
                self._signups.retry_after(address, now),
            )
        self._signups.add(address, now)
