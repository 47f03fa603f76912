"""The base of every request body: text fields may not carry NUL characters.

PostgreSQL cannot store U+0000 in text or JSON, so it is refused at the door (422) instead of
failing deep inside a transaction.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator


def contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(contains_nul(item) for item in value)
    return False


def strip_nul(value: Any) -> Any:
    """A copy of a JSON-like value with NUL characters removed from every string."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {strip_nul(k): strip_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strip_nul(item) for item in value]
    return value


class RequestModel(BaseModel):
    @field_validator("*", mode="after")
    @classmethod
    def _no_nul_characters(cls, value: Any) -> Any:
        if contains_nul(value):
            raise ValueError("must not contain NUL (\\u0000) characters")
        return value
