"""What an API key may do: each route needs one scope, read off its method and its tags.

A login (JWT) may do everything its role allows; a key only what its scopes name. The rule
lives here, in one place, so a new route gets a scope by its tag instead of by remembering to
add a check: a route whose tag is not listed cannot be used with a key at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Scope(StrEnum):
    read = "read"
    chat = "chat"
    upload = "upload"
    admin = "admin"


# Managing sign-in itself (tokens, keys, password, profile) needs a login, never a key.
LOGIN_ONLY_TAGS = frozenset({"auth", "api-keys"})
WRITE_SCOPE_BY_TAG = {
    "documents": Scope.upload,
    "collections": Scope.upload,
    "chats": Scope.chat,
    "messages": Scope.chat,
    "categories": Scope.chat,
    "openai-compatible": Scope.chat,
}
READ_METHODS = frozenset({"GET", "HEAD"})


def required_scope(method: str, tags: Iterable[str]) -> Scope | None:
    """The scope a key needs for this route, or None when no key may use it."""
    tag_set = set(tags)
    if "admin" in tag_set:
        return Scope.admin
    if tag_set & LOGIN_ONLY_TAGS:
        return None
    if method.upper() in READ_METHODS:
        return Scope.read
    for tag in tag_set:
        if tag in WRITE_SCOPE_BY_TAG:
            return WRITE_SCOPE_BY_TAG[tag]
    return None
