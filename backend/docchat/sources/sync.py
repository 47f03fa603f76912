"""Keeping a collection in step with its sources: the incremental sync, run by workers.

A worker claims a due source (one at a time per source: `FOR UPDATE SKIP LOCKED`, then a
claim token that every later step checks, as ingestion jobs do), lists it, and compares the
listing with the items the last sync left (`source_items`):

- a new item becomes a document of the source's owner in its collection (`add_file`, through
  the same fair queue as uploads: a large first sync takes its turns with everyone else);
- a changed one (another version: ETag, modification time, blob id) becomes a new version of
  its document, which keeps answering from the old content until the new one is read;
- one no longer listed is deleted with its document, and stops answering at the next question;
- an unchanged one costs nothing: no read, no extraction, no embedding.

Each item is one transaction (its document and its row together), so a sync cut short (a
worker killed mid-way) leaves every item either done or not: the next claim lists again and
finds the done ones unchanged, so nothing is added twice and no removal is lost. A failing
item does not fail the sync: it keeps its reason (`error`) and is tried again next time. A
source that cannot be listed at all backs off: 1, 2, 4, ... minutes, up to a day, between tries;
one that exceeds a bound of the installation (`SourceLimit`: a Git fetch too large) would only
fail again, so it waits until its settings change or someone asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import delete, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents import service as documents_service
from docchat.documents.fetch import check_reachable_address
from docchat.documents.models import Document
from docchat.documents.storage import FileStorage
from docchat.kit.errors import DocchatError
from docchat.kit.routing import run_after_commit
from docchat.kit.secretbox import SecretUnreadable, unseal
from docchat.membership.models import CollectionDocument
from docchat.retrieval.index import VectorIndex
from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceItem as ItemRow
from docchat.sources.models import SourceState
from docchat.sources.port import SOURCES, Source, SourceError, SourceItem, close_source
from docchat.users.models import User

logger = logging.getLogger(__name__)
# Rows a statement writes at once (a statement takes at most 32,767 parameters).
BATCH = 5000
NOT_RETRIED = "It is not tried again on its own: change its settings, or choose Sync now"

# A due source, or one whose worker stopped beating (it died): claimed by one worker alone.
_CLAIM = text(
    """
UPDATE sources s SET claim_token = :token, heartbeat_at = :now,
    state = CASE WHEN s.state = 'removing' THEN 'removing' ELSE 'syncing' END,
    last_started_at = CASE WHEN s.state = 'syncing' THEN s.last_started_at ELSE :now END,
    progress = CASE WHEN s.state = 'syncing' THEN s.progress ELSE '{}'::jsonb END
WHERE s.id = (
    SELECT c.id FROM sources c
    JOIN collections col ON col.id = c.collection_id AND col.deleted_at IS NULL
    JOIN users u ON u.id = c.owner_id AND u.is_active
    WHERE ((c.state IN ('idle', 'failing', 'removing') AND c.next_sync_at <= :now
            AND c.claim_token IS NULL)
        OR (c.state IN ('syncing', 'removing') AND c.claim_token IS NOT NULL
            AND c.heartbeat_at < :stale_before))
      -- Its owner still owns the collection (directly or through a group), or it is
      -- being removed: nobody brings files into a collection they no longer own.
      AND (c.state = 'removing' OR EXISTS (
        SELECT 1 FROM collection_members m
        WHERE m.collection_id = c.collection_id AND m.role = 'owner'
          AND m.accepted_at IS NOT NULL
          AND (m.user_id = c.owner_id OR m.group_id IN (
                SELECT g.group_id FROM group_members g WHERE g.user_id = c.owner_id))))
    ORDER BY c.next_sync_at NULLS FIRST
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED
)
RETURNING s.id
"""
)


class LostClaim(Exception):
    """The source was paused, deleted or taken over by another worker: stop at once."""


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


@dataclass(frozen=True)
class Claim:
    source_id: uuid.UUID
    token: uuid.UUID
    collection_id: uuid.UUID
    owner_id: uuid.UUID
    kind: str
    removing: bool
    interval_minutes: int | None
    failures: int


@dataclass
class _Plan:
    bring: list[tuple[SourceItem, ItemRow | None]] = field(default_factory=list)
    remove: list[ItemRow] = field(default_factory=list)
    # Unchanged documents no longer in the collection (taken out by hand): put back.
    relink: list[uuid.UUID] = field(default_factory=list)


class SyncParts(Protocol):
    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    vector_index: VectorIndex
    storage: FileStorage


def connector_settings(row: SourceRow, settings: Settings) -> dict[str, str]:
    """What a kind's factory is made from: the source's settings, its credentials unsealed,
    and the installation's limits (the folder roots)."""
    values = dict(row.settings)
    if row.secrets:
        secret_key = settings.auth.secret_key
        assert secret_key is not None, "the signing key is set when the app starts"
        values |= unseal(row.secrets, secret_key.get_secret_value())
    # The installation's limits, which the kinds apply: folder roots, fetch rules, sizes.
    values["allowed_roots"] = ":".join(str(root) for root in settings.sources.folder_roots)
    values["cache_dir"] = str(cache_dir(row, settings))
    values["fetch_allowed_hosts"] = ",".join(settings.url_fetch.allowed_hosts)
    values["fetch_timeout_seconds"] = str(settings.url_fetch.timeout_seconds)
    values["fetch_max_redirects"] = str(settings.url_fetch.max_redirects)
    values["max_bytes"] = str(settings.max_upload_bytes)
    values["max_items"] = str(settings.sources.max_items)
    limits = settings.sources
    values["git_max_bytes"] = str(limits.git_max_bytes)
    values["git_max_objects"] = str(limits.git_max_objects)
    values["git_timeout_seconds"] = str(limits.git_timeout_seconds)
    values["sitemap_max_bytes"] = str(limits.sitemap_max_bytes)
    values["sitemap_max_entries"] = str(limits.sitemap_max_entries)
    return values


def cache_dir(row: SourceRow, settings: Settings) -> Path:
    """Where a kind may keep what it fetched between syncs (a Git source's repository)."""
    return settings.data_dir / "sources" / (row.id.hex if row.id else "new")


def forget_cache(row: SourceRow, settings: Settings) -> None:
    shutil.rmtree(cache_dir(row, settings), ignore_errors=True)


async def check_addresses(row: SourceRow, settings: Settings) -> None:
    """Refuse (BadRequest) an address of the source on a network users may not reach, as URL
    fetches do: at creation, and before every sync (a name may resolve elsewhere by then).
    The addresses are the settings its kind declares so (`Connector.addresses`)."""
    for name in SOURCES.get(row.kind).addresses:
        address = row.settings.get(name)
        if address:
            await check_reachable_address(address, settings.url_fetch)


def open_connector(row: SourceRow, settings: Settings) -> Source:
    """The connector of a source; `SourceError` when it cannot be made as configured."""
    try:
        return SOURCES.get(row.kind)(connector_settings(row, settings))
    except SecretUnreadable as exc:
        raise SourceError(str(exc)) from exc
    except KeyError as exc:
        raise SourceError(f"its settings lack {exc}") from exc


def backoff(failures: int, interval_minutes: int | None, longest_minutes: int) -> timedelta:
    """The wait after `failures` failed listings in a row: doubling from a minute, never
    past the source's own interval or `longest_minutes`."""
    minutes = min(2 ** max(failures - 1, 0), longest_minutes)
    if interval_minutes:
        minutes = min(minutes, interval_minutes)
    return timedelta(minutes=minutes)


class SourceSyncer:
    def __init__(self, parts: SyncParts, worker_id: str | None = None) -> None:
        self.settings = parts.settings
        self.sessionmaker = parts.sessionmaker
        self.index = parts.vector_index
        self.storage = parts.storage
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Sync due sources until `stop` is set; a sync in hand is left to be taken again."""
        while not stop.is_set():
            try:
                worked = await self.run_once()
            except Exception:
                logger.exception("source sync failed; retrying")
                worked = False
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.sources.poll_seconds)

    async def run_until_idle(self, max_syncs: int = 100) -> int:
        """Sync every due source (tests and scripts); how many were."""
        done = 0
        while done < max_syncs and await self.run_once():
            done += 1
        return done

    async def run_once(self) -> bool:
        """Claim one due source and sync (or remove) it; False when none was due."""
        claim = await self._claim()
        if claim is None:
            return False
        beating = asyncio.create_task(self._beat(claim))
        try:
            if claim.removing:
                await self._remove_source(claim)
            else:
                await self._sync(claim)
        except LostClaim:
            logger.info("source %s: claim lost (paused, deleted or taken over)", claim.source_id)
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        return True

    # -- the claim and its fence ---------------------------------------------------------------

    async def _claim(self) -> Claim | None:
        now = utcnow()
        stale = now - timedelta(seconds=self.settings.worker.stale_after_seconds)
        token = uuid.uuid4()
        async with self.sessionmaker() as session:
            claimed = await session.execute(
                _CLAIM, {"token": token, "now": now, "stale_before": stale}
            )
            source_id = claimed.scalar_one_or_none()
            if source_id is None:
                await session.commit()
                return None
            row = await session.get(SourceRow, source_id)
            assert row is not None
            await session.commit()
            return Claim(
                row.id,
                token,
                row.collection_id,
                row.owner_id,
                row.kind,
                row.state == SourceState.removing,
                row.interval_minutes,
                row.failures,
            )

    async def _hold(self, session: AsyncSession, claim: Claim) -> SourceRow:
        """The source's row, locked, if this claim still holds it; else `LostClaim`."""
        # FOR KEY SHARE: the row cannot be deleted (nor the account that owns it) while a file
        # is written, but pausing or "Sync now" need not wait for the file: they take the
        # claim away, and the next step sees that.
        statement = (
            select(SourceRow)
            .where(SourceRow.id == claim.source_id, SourceRow.claim_token == claim.token)
            .with_for_update(read=True, key_share=True)
        )
        row = (await session.execute(statement)).scalar_one_or_none()
        if row is None:
            raise LostClaim()
        return row

    async def _beat(self, claim: Claim) -> None:
        while True:
            await asyncio.sleep(self.settings.worker.heartbeat_seconds)
            async with self.sessionmaker() as session:
                await session.execute(
                    update(SourceRow)
                    .where(SourceRow.id == claim.source_id, SourceRow.claim_token == claim.token)
                    .values(heartbeat_at=utcnow())
                )
                await session.commit()

    # -- one sync ------------------------------------------------------------------------------

    async def _sync(self, claim: Claim) -> None:
        async with self.sessionmaker() as session:
            row = await self._hold(session, claim)
            try:
                await check_addresses(row, self.settings)  # again: DNS answers change
                connector = open_connector(row, self.settings)
            except (SourceError, DocchatError) as exc:
                await session.rollback()
                await self._finish_failing(claim, _reason(exc))
                return
            await session.rollback()
        try:
            await self._sync_with(claim, connector)
        except LostClaim:
            raise
        except Exception:  # a bug or a surprise: the source says so and backs off
            logger.exception("source %s: sync failed", claim.source_id)
            await self._finish_failing(claim, "the sync failed unexpectedly; it is tried again")
        finally:
            await asyncio.to_thread(close_source, connector)

    async def _sync_with(self, claim: Claim, connector: Source) -> None:
        try:
            listed = await self._listing(connector)
        except SourceError as exc:
            await self._finish_failing(claim, str(exc), permanent=exc.permanent)
            return
        progress = Progress(listed=len(listed))
        if not listed and await self._known_items(claim):
            # A mistyped prefix or folder, an unmounted share: never a reason to delete all.
            await self._finish_failing(
                claim,
                "it lists no files now, where the last sync found some: nothing was removed "
                "(check its settings; delete the source to remove its documents)",
            )
            return
        plan = await self._plan(claim, listed, progress)
        if plan.relink:
            await self._relink(claim, plan.relink)
        for item, known in plan.bring:
            await self._bring(claim, connector, item, known, progress)
        for known in plan.remove:
            await self._remove_item(claim, known, progress)
        await self._finish(claim, progress)

    async def _known_items(self, claim: Claim) -> bool:
        async with self.sessionmaker() as session:
            statement = select(ItemRow.id).where(ItemRow.source_id == claim.source_id).limit(1)
            return (await session.execute(statement)).first() is not None

    async def _listing(self, connector: Source) -> dict[str, SourceItem]:
        limit = self.settings.sources.max_items
        listed: dict[str, SourceItem] = {}
        async for item in connector.items():
            listed[item.key] = item
            if len(listed) > limit:
                raise SourceError(
                    f"it holds more than {limit:,} files (SOURCES_MAX_ITEMS): choose a narrower "
                    "folder or prefix"
                )
        return listed

    async def _plan(
        self, claim: Claim, listed: Mapping[str, SourceItem], progress: Progress
    ) -> _Plan:
        """What to bring in and what to remove; the unchanged are counted and left alone."""
        async with self.sessionmaker() as session:
            rows = (
                await session.execute(select(ItemRow).where(ItemRow.source_id == claim.source_id))
            ).scalars()
            known = {row.key: row for row in rows}
            live = await _live_documents(session, claim.source_id)
            linked = await _linked_documents(session, claim.source_id, claim.collection_id)
        plan = _Plan()
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
                    plan.relink.append(row.document_id)
            else:
                plan.bring.append((item, row))
        plan.remove = [row for key, row in known.items() if key not in listed]
        progress.done = progress.unchanged
        progress.to_do = len(listed) + len(plan.remove)
        await self._report(claim, progress)
        return plan

    async def _relink(self, claim: Claim, document_ids: list[uuid.UUID]) -> None:
        """The collection holds what its source holds: documents taken out of it by hand
        while still in the source come back (the source is where they are managed)."""
        async with self.sessionmaker() as session:
            await self._hold(session, claim)
            for start in range(0, len(document_ids), BATCH):
                rows = [
                    {
                        "collection_id": claim.collection_id,
                        "document_id": document_id,
                        "owner_id": claim.owner_id,
                    }
                    for document_id in document_ids[start : start + BATCH]
                ]
                await session.execute(
                    insert(CollectionDocument).values(rows).on_conflict_do_nothing()
                )
            await session.commit()

    async def _bring(
        self,
        claim: Claim,
        connector: Source,
        item: SourceItem,
        known: ItemRow | None,
        progress: Progress,
    ) -> None:
        """Add a new item, or a changed one as a new version of its document, in one
        transaction with its row; a failure is kept on the row and counted."""
        outcome = "failed"
        error: str | None = None
        async with self.sessionmaker() as session:
            await self._hold(session, claim)
            owner = await session.get(User, claim.owner_id)
            assert owner is not None
            document = await _live_document(session, known.document_id if known else None)
            try:
                async with connector.open(item) as stream:
                    outcome, document = await self._store(
                        session, claim, owner, item, stream, document
                    )
            except LostClaim:
                raise
            except Exception as exc:  # one item's failure is the item's, not the sync's
                error = _reason(exc)
                if not isinstance(exc, SourceError | DocchatError):
                    logger.exception("source %s: item %s failed", claim.source_id, item.key)
                await session.rollback()
                await self._hold(session, claim)
            await _save_item(
                session,
                claim.source_id,
                item,
                document.id if document is not None and error is None else _kept(known),
                version=item.version if error is None else (known.version if known else ""),
                error=error,
            )
            setattr(progress, outcome, getattr(progress, outcome) + 1)
            progress.done += 1
            await self._report(claim, progress, session)
            await session.commit()

    async def _store(
        self,
        session: AsyncSession,
        claim: Claim,
        owner: User,
        item: SourceItem,
        stream: Any,
        document: Document | None,
    ) -> tuple[str, Document]:
        settings = self.settings
        if document is None:
            upload = await documents_service.add_file(
                session,
                self.storage,
                owner,
                stream,
                item.name,
                max_bytes=settings.max_upload_bytes,
                quota=settings.quota,
                deduplicate=False,
            )
            await session.execute(
                insert(CollectionDocument)
                .values(
                    collection_id=claim.collection_id,
                    document_id=upload.document.id,
                    owner_id=owner.id,
                )
                .on_conflict_do_nothing()
            )
            return "added", upload.document
        upload = await documents_service.upload_version(
            session,
            self.storage,
            owner,
            document,
            stream,
            item.name,
            max_bytes=settings.max_upload_bytes,
            quota=settings.quota,
        )
        return ("unchanged" if upload.duplicate else "changed"), document

    async def _remove_item(self, claim: Claim, known: ItemRow, progress: Progress) -> None:
        """An item gone from the source: its document goes (and its row), in one transaction."""
        async with self.sessionmaker() as session:
            await self._hold(session, claim)
            try:
                await self._delete_document(session, claim, known.document_id)
            except DocchatError as exc:
                await session.rollback()
                await self._hold(session, claim)
                await session.execute(
                    update(ItemRow).where(ItemRow.id == known.id).values(error=exc.message)
                )
                progress.failed += 1
            else:
                await session.execute(delete(ItemRow).where(ItemRow.id == known.id))
                progress.removed += 1
            progress.done += 1
            await self._report(claim, progress, session)
            await session.commit()
            await run_after_commit(session)

    async def _delete_document(
        self, session: AsyncSession, claim: Claim, document_id: uuid.UUID | None
    ) -> None:
        document = await _live_document(session, document_id)
        if document is None:
            return
        owner = await session.get(User, claim.owner_id)
        assert owner is not None
        await documents_service.delete(
            session, self.index, self.storage, self.sessionmaker, owner, document
        )

    async def _report(
        self, claim: Claim, progress: Progress, session: AsyncSession | None = None
    ) -> None:
        """Write the progress (in `session`'s transaction when given)."""
        statement = (
            update(SourceRow)
            .where(SourceRow.id == claim.source_id, SourceRow.claim_token == claim.token)
            .values(progress=progress.as_json())
        )
        if session is not None:
            await session.execute(statement)
            return
        async with self.sessionmaker() as own:
            await own.execute(statement)
            await own.commit()

    async def _finish(self, claim: Claim, progress: Progress) -> None:
        now = utcnow()
        failed = progress.failed
        async with self.sessionmaker() as session:
            row = await self._hold(session, claim)
            row.state = SourceState.idle
            row.claim_token = None
            row.failures = 0
            row.last_finished_at = now
            row.next_sync_at = next_sync(row, now)
            row.last_error = (
                f"{failed} item(s) could not be brought in: see them" if failed else None
            )
            row.progress = progress.as_json()
            await session.commit()
        logger.info("source %s synced: %s", claim.source_id, progress.as_json())

    async def _finish_failing(self, claim: Claim, reason: str, *, permanent: bool = False) -> None:
        """The source could not be listed: tried again after a backoff, or, when trying again
        can only fail the same way (a bound exceeded), not until its settings change or
        someone asks (Sync now)."""
        now = utcnow()
        async with self.sessionmaker() as session:
            row = await self._hold(session, claim)
            row.failures += 1
            wait = backoff(
                row.failures, row.interval_minutes, self.settings.sources.max_backoff_minutes
            )
            row.state = SourceState.failing
            row.claim_token = None
            row.last_finished_at = now
            row.next_sync_at = None if permanent else now + wait
            row.last_error = f"{reason}. {NOT_RETRIED}" if permanent else reason
            await session.commit()
        logger.warning("source %s could not be synced: %s", claim.source_id, reason)

    # -- removal -------------------------------------------------------------------------------

    async def _remove_source(self, claim: Claim) -> None:
        """A source deleted with its documents: each goes in its own transaction (resumable),
        then the source itself."""
        async with self.sessionmaker() as session:
            rows = (
                await session.execute(select(ItemRow).where(ItemRow.source_id == claim.source_id))
            ).scalars()
            items = list(rows)
        progress = Progress(to_do=len(items))
        for known in items:
            await self._remove_item(claim, known, progress)
        async with self.sessionmaker() as session:
            await self._hold(session, claim)
            left = (
                await session.execute(
                    select(ItemRow.id).where(ItemRow.source_id == claim.source_id).limit(1)
                )
            ).first()
            if left is None:
                row = await session.get(SourceRow, claim.source_id)
                assert row is not None
                await asyncio.to_thread(forget_cache, row, self.settings)
                await session.execute(delete(SourceRow).where(SourceRow.id == claim.source_id))
            else:  # some could not be removed (the vector store was down): again later
                await session.execute(
                    update(SourceRow)
                    .where(SourceRow.id == claim.source_id)
                    .values(claim_token=None, next_sync_at=utcnow() + timedelta(minutes=1))
                )
            await session.commit()


def _reason(exc: Exception) -> str:
    """Why an item could not be brought in, for the source's owner."""
    if isinstance(exc, DocchatError):
        return exc.message
    if isinstance(exc, SourceError):
        return str(exc)
    return f"it could not be read ({type(exc).__name__})"


def _kept(known: ItemRow | None) -> uuid.UUID | None:
    return known.document_id if known is not None else None


async def _live_documents(session: AsyncSession, source_id: uuid.UUID) -> set[uuid.UUID | None]:
    """The source's items' documents that are not deleted (a join: a source may hold tens of
    thousands, more than a statement's parameters)."""
    statement = (
        select(ItemRow.document_id)
        .join(Document, Document.id == ItemRow.document_id)
        .where(ItemRow.source_id == source_id, Document.deleted_at.is_(None))
    )
    return set((await session.execute(statement)).scalars())


async def _linked_documents(
    session: AsyncSession, source_id: uuid.UUID, collection_id: uuid.UUID
) -> set[uuid.UUID | None]:
    """The source's items' documents that its collection holds."""
    statement = (
        select(ItemRow.document_id)
        .join(
            CollectionDocument,
            (CollectionDocument.document_id == ItemRow.document_id)
            & (CollectionDocument.collection_id == collection_id),
        )
        .where(ItemRow.source_id == source_id)
    )
    return set((await session.execute(statement)).scalars())


async def _live_document(session: AsyncSession, document_id: uuid.UUID | None) -> Document | None:
    if document_id is None:
        return None
    document = await session.get(Document, document_id)
    return document if document is not None and document.deleted_at is None else None


async def _save_item(
    session: AsyncSession,
    source_id: uuid.UUID,
    item: SourceItem,
    document_id: uuid.UUID | None,
    *,
    version: str,
    error: str | None,
) -> None:
    values: dict[str, Any] = {
        "version": version,
        "document_id": document_id,
        "error": error,
        "synced_at": utcnow(),
    }
    await session.execute(
        insert(ItemRow)
        .values(id=uuid.uuid4(), source_id=source_id, key=item.key, **values)
        .on_conflict_do_update(index_elements=["source_id", "key"], set_=values)
    )


def next_sync(row: SourceRow, now: datetime) -> datetime | None:
    """When a source's schedule next runs from `now` (None: only when asked)."""
    return now + timedelta(minutes=row.interval_minutes) if row.interval_minutes else None
