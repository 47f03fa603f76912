"""Passwords: argon2 hashing off the event loop, and refusing passwords that are easy to guess.

Argon2 is slow and memory-hungry on purpose (about 50 ms and 64 MB per hash), so it runs in a
small pool of threads of its own (argon2 releases the GIL), never on the event loop. The pool
is also the limiter: at most one hash per core runs at a time, and when too many wait, new
requests are turned away at once with 429 instead of queueing without end.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from zxcvbn import zxcvbn

from docchat.kit.errors import TooManyRequests

# Waiting hashes beyond which new ones are refused (a second or two of queue on two cores).
MAX_WAITING = 32
# zxcvbn scores 0-4; below this a password falls to an online guessing attack.
MIN_STRENGTH = 2
# zxcvbn's cost grows with length; the first characters decide whether a password is weak.
STRENGTH_CHARS = 100

# The stored hash of an account with no password of its own (a directory checks it): it is no
# argon2 hash, so no password matches it.
NO_PASSWORD = "!"  # noqa: S105

_hasher = PasswordHasher()
# Verified against when the email is unknown, so a miss costs the same time as a wrong password.
_DUMMY_HASH = _hasher.hash("docchat-timing-equaliser")
T = TypeVar("T")


def hash_password_now(password: str) -> str:
    """Blocking: for command-line tools and tests, never for a request."""
    return _hasher.hash(password)


def _verify(password: str, password_hash: str | None) -> bool:
    # No hash, or an account without a password of its own: the same work, then no.
    usable = password_hash if password_hash and password_hash != NO_PASSWORD else None
    try:
        return _hasher.verify(usable or _DUMMY_HASH, password) and bool(usable)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


class _HashingPool:
    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="argon2")
        self._waiting = 0
        self._lock = threading.Lock()

    async def run(self, function: Any, *args: Any) -> Any:
        with self._lock:
            if self._waiting >= MAX_WAITING:
                raise TooManyRequests(
                    "The server is busy checking passwords; try again in a moment",
                    headers={"Retry-After": "2"},
                )
            self._waiting += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)
        finally:
            with self._lock:
                self._waiting -= 1


_pool = _HashingPool(threads=max(1, os.cpu_count() or 1))


async def hash_password(password: str) -> str:
    hashed: str = await _pool.run(_hasher.hash, password)
    return hashed


async def verify_password(password: str, password_hash: str | None) -> bool:
    """True when `password` matches; the same work is done when there is no hash (no user)."""
    matched: bool = await _pool.run(_verify, password, password_hash)
    return matched


def personal_words(email: str, display_name: str = "") -> list[str]:
    """What a guesser would try first for this person: the email, its name part and pieces."""
    local = email.split("@", 1)[0].lower()
    pieces = re.split(r"[^a-z0-9]+", f"{local} {display_name.lower()}")
    return [email.lower(), local, *(piece for piece in pieces if len(piece) >= 3)]


def weakness(password: str, *, related: list[str]) -> str | None:
    """Why `password` is too easy to guess (common, a pattern, the email), or None."""
    result = zxcvbn(password[:STRENGTH_CHARS], user_inputs=related)
    if result["score"] >= MIN_STRENGTH:
        return None
    warning = result["feedback"].get("warning") or "It would be guessed quickly"
    return f"This password is too easy to guess. {warning.rstrip('.')}. Use a longer passphrase"
