"""Failed-login throttling, per email and address and per email alone, in this process.

With several API replicas each keeps its own count, so the effective limit is per replica.
"""

from __future__ import annotations

import math
import time
from collections import deque

from docchat.kit.errors import TooManyRequests

# Many addresses guessing one account are throttled too, at a looser limit.
ACCOUNT_FACTOR = 5


class LoginLimiter:
    def __init__(self, max_failures: int, window_seconds: int) -> None:
        self.max_failures = max_failures
        self.window = window_seconds
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        failures = self._failures.setdefault(key, deque())
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    def _keys(self, address: str, email: str) -> list[tuple[str, int]]:
        email = email.strip().lower()
        return [
            (f"{address}|{email}", self.max_failures),
            (f"*|{email}", self.max_failures * ACCOUNT_FACTOR),
        ]

    def check(self, address: str, email: str) -> None:
        """Raise 429 (with Retry-After) while too many recent attempts failed."""
        now = time.monotonic()
        for key, limit in self._keys(address, email):
            failures = self._recent(key, now)
            if len(failures) >= limit:
                retry_after = max(1, math.ceil(failures[0] + self.window - now))
                error = TooManyRequests("Too many failed logins; try again later")
                error.headers = {"Retry-After": str(retry_after)}
                raise error

    def failed(self, address: str, email: str) -> None:
        now = time.monotonic()
        for key, _ in self._keys(address, email):
            self._recent(key, now).append(now)

    def succeeded(self, address: str, email: str) -> None:
        self._failures.pop(self._keys(address, email)[0][0], None)
