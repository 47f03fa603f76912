"""Keeping a collection in step with its sources: the incremental sync, run by workers.

A worker claims a due source (one at a time per source: `FOR UPDATE SKIP LOCKED`, then a
lease, `kit.lease`, that every later step checks, as ingestion jobs do), lists it, and
compares the listing with the items the last sync left (`source_items`, `plan.py`):

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
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents.storage import FileStorage
from docchat.kit.errors import DocchatError
from docchat.kit.lease import LostClaim, worker_name
from docchat.retrieval.index import VectorIndex
from docchat.sources import repository
from docchat.sources.addresses import check_addresses
from docchat.sources.claim import Claim, SourceClaims
from docchat.sources.connector import forget_cache, open_connector
from docchat.sources.items import ItemSync, failure_reason
from docchat.sources.models import SourceState
from docchat.sources.plan import Progress, SyncPlan, backoff, next_sync, plan
from docchat.sources.port import Source, SourceError, SourceItem, close_source

logger = logging.getLogger(__name__)
NOT_RETRIED = "It is not tried again on its own: change its settings, or choose Sync now"


class SyncParts(Protocol):
    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    vector_index: VectorIndex
    storage: FileStorage


class SourceSyncer:
    def __init__(self, parts: SyncParts, worker_id: str | None = None) -> None:
        self.settings = parts.settings
        self.sessionmaker = parts.sessionmaker
        self.index = parts.vector_index
        self.storage = parts.storage
        self.worker_id = worker_id or worker_name()
        self.claims = SourceClaims(self.sessionmaker, self.settings.worker)
        self.items = ItemSync(self.settings, self.claims, self.index, self.storage)

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
        claim = await self.claims.claim()
        if claim is None:
            return False
        try:
            async with self.claims.lease(claim).kept_alive():
                if claim.removing:
                    await self._remove_source(claim)
                else:
                    await self._sync(claim)
        except LostClaim:
            logger.info("source %s: claim lost (paused, deleted or taken over)", claim.source_id)
        return True

    # -- one sync ------------------------------------------------------------------------------

    async def _sync(self, claim: Claim) -> None:
        async with self.sessionmaker() as session:
            row = await self.claims.hold(session, claim)
            try:
                await check_addresses(row, self.settings.url_fetch)  # again: DNS answers change
                connector = open_connector(row, self.settings)
            except (SourceError, DocchatError) as exc:
                await session.rollback()
                await self._finish_failing(claim, failure_reason(exc))
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
            await self.items.bring(claim, connector, item, known, progress)
        for known in plan.remove:
            await self.items.remove(claim, known, progress)
        await self._finish(claim, progress)

    async def _known_items(self, claim: Claim) -> bool:
        async with self.sessionmaker() as session:
            return await repository.has_items(session, claim.source_id)

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
    ) -> SyncPlan:
        """What to bring in and what to remove; the unchanged are counted and left alone."""
        async with self.sessionmaker() as session:
            known = await repository.items_of(session, claim.source_id)
            live = await repository.live_documents(session, claim.source_id)
            linked = await repository.linked_documents(
                session, claim.source_id, claim.collection_id
            )
        result = plan(listed, known, live, linked, progress)
        await self.claims.report(claim, progress)
        return result

    async def _relink(self, claim: Claim, document_ids: list[uuid.UUID]) -> None:
        """The collection holds what its source holds: documents taken out of it by hand
        while still in the source come back (the source is where they are managed)."""
        async with self.sessionmaker() as session:
            await self.claims.hold(session, claim)
            await repository.link_documents(
                session, claim.collection_id, claim.owner_id, document_ids
            )
            await session.commit()

    async def _finish(self, claim: Claim, progress: Progress) -> None:
        now = utcnow()
        failed = progress.failed
        async with self.sessionmaker() as session:
            row = await self.claims.hold(session, claim)
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
            row = await self.claims.hold(session, claim)
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
            items = await repository.items_of(session, claim.source_id)
        progress = Progress(to_do=len(items))
        for known in items:
            await self.items.remove(claim, known, progress)
        async with self.sessionmaker() as session:
            await self.claims.hold(session, claim)
            if not await repository.has_items(session, claim.source_id):
                row = await repository.get(session, claim.source_id)
                assert row is not None
                await asyncio.to_thread(forget_cache, row, self.settings)
                await repository.remove(session, claim.source_id)
            else:  # some could not be removed (the vector store was down): again later
                await repository.retry_removal(
                    session, claim.source_id, utcnow() + timedelta(minutes=1)
                )
            await session.commit()
