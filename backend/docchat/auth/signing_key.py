"""The token signing key: configured, or generated once and kept beside the data.

There is no built-in fallback key: a key anyone can read in the source lets anyone sign an
administrator's token. Without `AUTH_SECRET_KEY` (development and the run command), the first
start writes a random key to `DATA_DIR/secret_key`, readable by its owner only, and every later
start (and every process sharing the data folder) reads the same one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from pydantic import SecretStr

from docchat.config import MIN_SECRET_CHARS, Settings

KEY_BYTES = 48


def _read(path: Path) -> str:
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < MIN_SECRET_CHARS:
        raise RuntimeError(
            f"{path} holds no usable signing key (fewer than {MIN_SECRET_CHARS} characters); "
            "delete it to have a new one generated, or set AUTH_SECRET_KEY"
        )
    return key


def load_or_create_key(path: Path) -> str:
    """The key in `path`, created (mode 0600) if absent. Two processes starting at once agree:
    the file appears whole, by a hard link that fails when another process won the race."""
    if path.exists():
        return _read(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(secrets.token_urlsafe(KEY_BYTES) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return _read(path)


def with_signing_key(settings: Settings) -> Settings:
    """`settings` with `auth.secret_key` set: the configured key, else the data folder's."""
    if settings.auth.secret_key is not None:
        return settings
    key = SecretStr(load_or_create_key(settings.secret_key_file))
    auth = settings.auth.model_copy(update={"secret_key": key})
    return settings.model_copy(update={"auth": auth})
