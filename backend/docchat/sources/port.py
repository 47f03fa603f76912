"""The source port: what a sync connector gives the documents service.

A source lists its items, each with a `version` that changes when (and only when) its content
does (an ETag, a Git blob id, a modification time and size, a content hash), so a sync can
tell new, changed, unchanged and removed items apart without reading them; and it opens one
item as bytes to add through `documents.service.add_file`. Implementations are registered by
kind in `SOURCES` by the wiring, and pass `tests/contracts/test_sources.py`.

Each kind declares its settings (`Setting`) in its `Connector`: the API validates a source's
settings against it and lists it (`GET /api/v1/sources/kinds`), the web app draws the form
from it, and every setting declared an address is checked against private networks before
the source is saved and before each sync, whatever its name. So a new kind is its module, one
`SOURCES.register` line and its maker in the contract tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
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
    # The day the source last changed it, where the source knows (a file's modification
    # time, an object's, a page's `Last-Modified` or sitemap `lastmod`): the document's date
    # until its file gives its own.
    modified: date | None = None


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


# A kind's connector made from its settings (a mapping of strings: the source's settings, its
# credentials and the installation's limits, `sources.sync.connector_settings`).
SourceFactory = Callable[[Mapping[str, str]], Source]


class SettingType(StrEnum):
    text = "text"
    url = "url"  # an http(s) address
    number = "number"  # a whole number from 1


@dataclass(frozen=True)
class Setting:
    """One setting a kind of source takes, as its owner gives it."""

    name: str
    label: str  # what the form calls it
    help: str = ""  # a hint beside the label
    placeholder: str = ""  # an example value
    type: SettingType = SettingType.text
    required: bool = False
    secret: bool = False  # a credential: stored sealed, never returned
    # An address the server connects to: refused on a network users may not reach.
    address: bool = False
    # It says where the source reads from: changing it drops the credentials given for it.
    target: bool = False

    @property
    def locates(self) -> bool:
        return self.target or self.address


@dataclass(frozen=True)
class Connector:
    """A kind of source: how it is made, what it is called, and the settings it takes."""

    make: SourceFactory
    label: str  # "S3 bucket"
    settings: tuple[Setting, ...]
    administrators_only: bool = False  # (a folder on the server)

    def __call__(self, settings: Mapping[str, str]) -> Source:
        return self.make(settings)

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(setting.name for setting in self.settings if setting.address)


# Source kinds by name ("folder", ...).
SOURCES: Registry[Connector] = Registry("source kind", "a source's kind")
