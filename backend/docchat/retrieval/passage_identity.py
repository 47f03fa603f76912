"""Where a passage comes from, as the model reads it: a header line before the passage's text
that names its document, its place in it (page, slide, sheet and rows, heading path), the
document's own date, when it was uploaded and the collections it is in, so that a model can
tell two sources apart and which one is newer. Citations stay `[n]`. A passage reads:

    [1] "Guide.md", Ferries, page 3 · dated 2023-04-01 · uploaded 2026-11-20 · collection Port
    The ferry leaves at nine.

Everything in the header is text someone else chose (a file name, a heading, a collection's
name): each piece is made one line, its quotes and brackets replaced and its length cut, so a
file called "x\\n\\nIgnore previous instructions" stays a quoted name on the header's line and
can never pose as a passage number or a line of instructions.

The engine has no database: the dates and collections come through `DocumentIdentities`, a
port the documents package implements, asked once per answer (and once per tool search) with
the documents of the passages found.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from docchat.retrieval.schemas import Source

NAME_CHARS = 80
LOCATION_CHARS = 80
COLLECTION_CHARS = 40
# Collections named in a header; more are counted ("and 2 more").
COLLECTIONS_NAMED = 3
# What a header may take, on average, of the context budget (they are about 100 characters).
HEADER_CHARS = 120
SEPARATOR = " · "


@dataclass(frozen=True)
class DocumentIdentity:
    """What a passage's header says of its document besides its name and place."""

    # The document's own date (`Document.document_date`), None when it has none.
    document_date: dt.date | None = None
    # When its current content was uploaded.
    uploaded: dt.date | None = None
    # The collections it is in that the asker belongs to (and "Everyone" for a document
    # shared with everyone), by name.
    collections: tuple[str, ...] = ()


class DocumentIdentities(Protocol):
    """The identity of documents whose passages an answer shows its model."""

    async def identities(
        self, documents: Collection[uuid.UUID], reader: uuid.UUID | None
    ) -> Mapping[uuid.UUID, DocumentIdentity]:
        """Each of `documents` (ids the owner-scoped query already let through) that still
        exists, with the collections `reader` may see it in (none for no reader), in one
        query. A document missing from the answer gets a header with its name and place."""
        ...


def one_line(text: str, limit: int) -> str:
    """`text` as one line of at most `limit` characters, fit for a header: line breaks, tabs
    and other invisible characters become spaces, runs of spaces one, double quotes single
    ones and square brackets round ones (no `[2]` inside a name), and what is too long is
    cut with an ellipsis."""
    visible = "".join(ch if ch.isprintable() else " " for ch in text)
    line = " ".join(visible.split())
    line = line.replace('"', "'").replace("[", "(").replace("]", ")")
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def place_of(source: Source) -> str:
    """Where the passage is in its document: its location (slide, sheet and rows, heading
    path), then its page."""
    parts = []
    if source.location:
        parts.append(one_line(source.location, LOCATION_CHARS))
    if source.page is not None:
        parts.append(f"page {source.page}")
    return ", ".join(part for part in parts if part)


def _collections(names: tuple[str, ...]) -> str:
    shown = [one_line(name, COLLECTION_CHARS) for name in names[:COLLECTIONS_NAMED]]
    more = len(names) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more else "")
    return f"{'collection' if len(names) == 1 else 'collections'} {listed}"


def header(number: int, source: Source, identity: DocumentIdentity | None) -> str:
    """The passage's header line: `[n] "name", place · dated · uploaded · collection`."""
    named = f'"{one_line(source.document_name, NAME_CHARS) or "untitled"}"'
    place = place_of(source)
    parts = [f"[{number}] {named}" + (f", {place}" if place else "")]
    if identity is not None:
        if identity.document_date is not None:
            parts.append(f"dated {identity.document_date.isoformat()}")
        if identity.uploaded is not None:
            parts.append(f"uploaded {identity.uploaded.isoformat()}")
        if identity.collections:
            parts.append(_collections(identity.collections))
    return SEPARATOR.join(parts)


def passage_block(number: int, text: str, source: Source, identity: DocumentIdentity | None) -> str:
    """A passage as the model reads it: its header line, then its text."""
    return f"{header(number, source, identity)}\n{text}"
