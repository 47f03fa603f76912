"""The source port: what a sync connector gives the documents service.

A source lists its items, each with a `version` that changes when (and only when) its content
does (an ETag, a Git blob id, a modification time and size, a content hash), so a sync can
tell new, changed, unchanged and removed items apart without reading them; and it opens one
item as bytes to add through `documents.service.add_file`. Implementations are registered by
kind in `SOURCES` by the wiring, and pass `tests/contracts/test_sources.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from docchat.documents.storage import ByteSource
from docchat.kit.registry import Registry


class SourceError(Exception):
    """The source, or one of its items, cannot be read; the message says why, for its owner."""

    # Whether trying again can only fail the same way until the source's settings change.
    permanent = False


class SourceLimit(SourceError):
    """The source exceeds a bound of the installation (a Git fetch's size or object count):
    it is not tried again on its own, only when its settings change or someone asks."""

    permanent = True


@dataclass(frozen=True)
class SourceItem:
    key: str  # stable within the source: a path, an object key
    name: str  # the file name a document gets
    version: str  # changes when the content changes
    size: int | None = None


class Source(Protocol):
    def items(self) -> AsyncIterator[SourceItem]:
        """Every item the source holds now."""
        ...

    def open(self, item: SourceItem) -> AbstractAsyncContextManager[ByteSource]:
        """The item's bytes; `SourceError` when it is gone or unreadable. A source that fetches
        a snapshot to list (a Git commit) may read the item as that snapshot had it."""
        ...


def close_source(source: Source) -> None:
    """Let go of what a source holds open (a kind may have a `close()`; most have nothing)."""
    close = getattr(source, "close", None)
    if callable(close):
        close()


# Source kinds by name ("folder", ...), each made from its settings (a mapping of strings).
SourceFactory = Callable[[Mapping[str, str]], Source]
SOURCES: Registry[SourceFactory] = Registry("source kind", "a source's kind")
