"""The sync plan: what a listing asks for against what the last sync left (bring in, remove,
put back, leave alone), how far a sync is, and when a source is synced next."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceItem as ItemRow
from docchat.sources.port import SourceItem


@dataclass
class Progress:
    listed: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    done: int = 0  # items looked at so far (of `listed` + those removed)
    to_do: int = 0

    def as_json(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class SyncPlan:
    bring: list[tuple[SourceItem, ItemRow | None]] = field(default_factory=list)
    remove: list[ItemRow] = field(default_factory=list)
    # Unchanged documents no longer in the collection (taken out by hand): put back.
    relink: list[uuid.UUID] = field(default_factory=list)


def plan(
    listed: Mapping[str, SourceItem],
    known_items: Iterable[ItemRow],
    live: set[uuid.UUID | None],
    linked: set[uuid.UUID | None],
    progress: Progress,
) -> SyncPlan:
    """What to bring in and what to remove, from the listing, the items the last sync left,
    which of their documents are `live` and which the collection holds (`linked`); the
    unchanged are counted in `progress` and left alone."""
    known = {row.key: row for row in known_items}
    result = SyncPlan()
    for key, item in listed.items():
        row = known.get(key)
        current = (
            row is not None
            and row.error is None
            and row.version == item.version
            and row.document_id in live
        )
        if current:
            progress.unchanged += 1
            if row is not None and row.document_id not in linked:
                assert row.document_id is not None
                result.relink.append(row.document_id)
        else:
            result.bring.append((item, row))
    result.remove = [row for key, row in known.items() if key not in listed]
    progress.done = progress.unchanged
    progress.to_do = len(listed) + len(result.remove)
    return result


def backoff(failures: int, interval_minutes: int | None, longest_minutes: int) -> timedelta:
    """The wait after `failures` failed listings in a row: doubling from a minute, never
    past the source's own interval or `longest_minutes`."""
    minutes = min(2 ** max(failures - 1, 0), longest_minutes)
    if interval_minutes:
        minutes = min(minutes, interval_minutes)
    return timedelta(minutes=minutes)


def next_sync(row: SourceRow, now: datetime) -> datetime | None:
    """When a source's schedule next runs from `now` (None: only when asked)."""
    return now + timedelta(minutes=row.interval_minutes) if row.interval_minutes else None
