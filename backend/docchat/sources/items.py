"""One item of a sync, one transaction with its row: brought in (a new document, or a new
version of its document) or removed with its document. A failure is the item's, not the
sync's: it is kept on the item's row and counted."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings
from docchat.documents import service as documents_service
from docchat.documents.models import Document
from docchat.documents.storage import FileStorage
from docchat.kit.errors import DocchatError
from docchat.kit.lease import LostClaim
from docchat.kit.routing import run_after_commit
from docchat.retrieval.index import VectorIndex
from docchat.sources import repository
from docchat.sources.claim import Claim, SourceClaims
from docchat.sources.models import SourceItem as ItemRow
from docchat.sources.plan import Progress
from docchat.sources.port import Source, SourceError, SourceItem
from docchat.users.models import User

logger = logging.getLogger(__name__)


class ItemSync:
    def __init__(
        self,
        settings: Settings,
        claims: SourceClaims,
        index: VectorIndex,
        storage: FileStorage,
    ) -> None:
        self.settings = settings
        self.claims = claims
        self.sessionmaker: async_sessionmaker[AsyncSession] = claims.sessionmaker
        self.index = index
        self.storage = storage

    async def bring(
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
            await self.claims.hold(session, claim)
            owner = await repository.owner(session, claim.owner_id)
            document = await repository.live_document(session, known.document_id if known else None)
            try:
                async with connector.open(item) as stream:
                    outcome, document = await self._store(
                        session, claim, owner, item, stream, document
                    )
            except LostClaim:
                raise
            except Exception as exc:  # one item's failure is the item's, not the sync's
                error = failure_reason(exc)
                if not isinstance(exc, SourceError | DocchatError):
                    logger.exception("source %s: item %s failed", claim.source_id, item.key)
                await session.rollback()
                await self.claims.hold(session, claim)
            await repository.save_item(
                session,
                claim.source_id,
                item.key,
                document.id if document is not None and error is None else _kept(known),
                version=item.version if error is None else (known.version if known else ""),
                error=error,
            )
            setattr(progress, outcome, getattr(progress, outcome) + 1)
            progress.done += 1
            await self.claims.report(claim, progress, session)
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
                modified=item.modified,
            )
            await repository.link_documents(
                session, claim.collection_id, owner.id, [upload.document.id]
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
            modified=item.modified,
        )
        return ("unchanged" if upload.duplicate else "changed"), document

    async def remove(self, claim: Claim, known: ItemRow, progress: Progress) -> None:
        """An item gone from the source: its document goes (and its row), in one transaction."""
        async with self.sessionmaker() as session:
            await self.claims.hold(session, claim)
            try:
                await self._delete_document(session, claim, known.document_id)
            except DocchatError as exc:
                await session.rollback()
                await self.claims.hold(session, claim)
                await repository.set_item_error(session, known.id, exc.message)
                progress.failed += 1
            else:
                await repository.delete_item(session, known.id)
                progress.removed += 1
            progress.done += 1
            await self.claims.report(claim, progress, session)
            await session.commit()
            await run_after_commit(session)

    async def _delete_document(
        self, session: AsyncSession, claim: Claim, document_id: uuid.UUID | None
    ) -> None:
        document = await repository.live_document(session, document_id)
        if document is None:
            return
        owner = await repository.owner(session, claim.owner_id)
        await documents_service.delete(
            session, self.index, self.storage, self.sessionmaker, owner, document
        )


def failure_reason(exc: Exception) -> str:
    """Why an item could not be brought in, for the source's owner."""
    if isinstance(exc, DocchatError):
        return exc.message
    if isinstance(exc, SourceError):
        return str(exc)
    return f"it could not be read ({type(exc).__name__})"


def _kept(known: ItemRow | None) -> uuid.UUID | None:
    return known.document_id if known is not None else None
