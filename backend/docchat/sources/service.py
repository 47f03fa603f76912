"""Managing sources: who may add, change and delete them, and what each kind needs.

A collection's owners manage its sources; whoever reads the collection sees them (and reads
what they bring, as any document of the collection). A folder on the server is for
administrators alone, and only under SOURCES_FOLDER_ROOTS. Credentials are sealed with the
installation's key (`kit.secretbox`) and never shown again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.config import Settings
from docchat.db import utcnow
from docchat.kit.errors import Conflict, Forbidden, NotFound, Unprocessable
from docchat.kit.pagination import PageParams, paginate
from docchat.kit.routing import after_commit
from docchat.kit.secretbox import seal
from docchat.membership.models import EVERYONE_ID, CollectionRole
from docchat.sharing.collections import require_role
from docchat.sources import repository
from docchat.sources.addresses import check_addresses
from docchat.sources.connector import forget_cache, open_connector
from docchat.sources.declared import checked_settings, connector_of, retargeted
from docchat.sources.models import Source as SourceRow
from docchat.sources.models import SourceItem as ItemRow
from docchat.sources.models import SourceState
from docchat.sources.plan import next_sync
from docchat.sources.port import SourceError
from docchat.sources.schemas import SourceCreate, SourceRead, SourceUpdate
from docchat.users.models import User

NOT_FOUND = "Source not found"


def as_read(row: SourceRow) -> SourceRead:
    return SourceRead.model_validate(row)


async def _check_reachable(row: SourceRow, settings: Settings) -> None:
    """The connector can be made as configured, and talks to no address users may not reach."""
    await check_addresses(row, settings.url_fetch)
    try:
        open_connector(row, settings)
    except SourceError as exc:
        raise Unprocessable(f"The source cannot be used: {exc}") from exc


def _interval(minutes: int | None, settings: Settings) -> int | None:
    if minutes is not None and minutes < settings.sources.min_interval_minutes:
        raise Unprocessable(
            f"Sources sync at most every {settings.sources.min_interval_minutes} minutes "
            "(SOURCES_MIN_INTERVAL_MINUTES)"
        )
    return minutes


def _seal(secrets: dict[str, str], settings: Settings) -> str | None:
    if not secrets:
        return None
    assert settings.auth.secret_key is not None, "the signing key is set when the app starts"
    return seal(secrets, settings.auth.secret_key.get_secret_value())


async def _record(
    session: AsyncSession,
    action: audit.AuditAction,
    user: User,
    row: SourceRow,
    address: str | None,
    **detail: Any,
) -> None:
    await audit.record(
        session,
        action,
        actor=user,
        target=("source", row.id),
        address=address,
        source=row.name,
        kind=row.kind,
        collection_id=str(row.collection_id),
        **detail,
    )


async def create(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    data: SourceCreate,
    settings: Settings,
    address: str | None,
) -> SourceRow:
    if collection_id == EVERYONE_ID:
        raise Unprocessable("Sources feed collections of your own, not Everyone")
    await require_role(session, user, collection_id, CollectionRole.owner)
    if connector_of(data.kind).administrators_only and not user.is_admin:
        raise Forbidden(f"Only administrators can add {data.kind} sources")
    fields, secrets = checked_settings(data.kind, data.settings, data.secrets)
    interval = (
        data.interval_minutes
        if "interval_minutes" in data.model_fields_set
        else settings.sources.default_interval_minutes
    )
    row = SourceRow(
        collection_id=collection_id,
        owner_id=user.id,
        kind=data.kind,
        name=data.name.strip(),
        settings=fields,
        secrets=_seal(secrets, settings),
        interval_minutes=_interval(interval, settings),
        state=SourceState.idle,
        next_sync_at=utcnow(),  # the first sync right away
        progress={},
    )
    await _check_reachable(row, settings)
    repository.add(session, row)
    await session.flush()
    await _record(session, audit.AuditAction.source_created, user, row, address)
    return row


async def get_readable(session: AsyncSession, user: User, source_id: uuid.UUID) -> SourceRow:
    """A source of a collection the user reads; a 404 for any other."""
    row = await repository.get(session, source_id)
    if row is None or row.state == SourceState.removing:
        raise NotFound(NOT_FOUND)
    try:
        await require_role(session, user, row.collection_id, CollectionRole.viewer)
    except NotFound as exc:
        raise NotFound(NOT_FOUND) from exc
    return row


async def get_managed(session: AsyncSession, user: User, source_id: uuid.UUID) -> SourceRow:
    """A source the user may change: an owner of its collection (folders: administrators)."""
    row = await get_readable(session, user, source_id)
    await require_role(session, user, row.collection_id, CollectionRole.owner)
    if connector_of(row.kind).administrators_only and not user.is_admin:
        raise Forbidden(f"Only administrators can change {row.kind} sources")
    return row


async def list_for_collection(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> Sequence[SourceRow]:
    await require_role(session, user, collection_id, CollectionRole.viewer)
    return await repository.in_collection(session, collection_id)


async def update(
    session: AsyncSession,
    user: User,
    source_id: uuid.UUID,
    changes: SourceUpdate,
    settings: Settings,
    address: str | None,
) -> SourceRow:
    row = await _locked(session, await get_managed(session, user, source_id))
    given = changes.model_fields_set
    if changes.name is not None:
        row.name = changes.name.strip()
    if changes.settings is not None or changes.secrets is not None:
        if row.owner_id != user.id and not user.is_admin:
            raise Forbidden(
                "Only the person who added the source (or an administrator) can change where "
                "it reads from or its credentials"
            )
        fields, secrets = checked_settings(
            row.kind, changes.settings or dict(row.settings), changes.secrets
        )
        moved = retargeted(row.kind, row.settings, fields)
        row.settings = fields
        if changes.secrets is not None:
            row.secrets = _seal(secrets, settings)
        elif moved:
            # Credentials go only where they were given for: asked for again.
            row.secrets = None
        await _check_reachable(row, settings)
        if row.state == SourceState.failing:
            row.next_sync_at = utcnow()  # changed settings may mend it: tried at once
    if "interval_minutes" in given:
        row.interval_minutes = _interval(changes.interval_minutes, settings)
        if row.state in (SourceState.idle, SourceState.failing):
            row.next_sync_at = next_sync(row, row.last_finished_at or utcnow())
    if changes.paused is True and row.state != SourceState.paused:
        # A running sync loses its claim and stops at its next item.
        row.state, row.claim_token, row.next_sync_at = SourceState.paused, None, None
    elif changes.paused is False and row.state == SourceState.paused:
        row.state, row.next_sync_at = SourceState.idle, utcnow()
    await session.flush()
    await _record(
        session, audit.AuditAction.source_changed, user, row, address, changed=sorted(given)
    )
    return row


async def _locked(session: AsyncSession, row: SourceRow, *, deleting: bool = False) -> SourceRow:
    """The row locked for a change. A worker writing a file holds it FOR KEY SHARE: a change
    (FOR NO KEY UPDATE) goes ahead at once and the worker sees it at its next step; a deletion
    (FOR UPDATE) waits for that one file."""
    await repository.lock(session, row, deleting=deleting)
    return row


async def sync_now(session: AsyncSession, user: User, source_id: uuid.UUID) -> SourceRow:
    row = await _locked(session, await get_managed(session, user, source_id))
    if row.state == SourceState.paused:
        raise Conflict("The source is paused: resume it first")
    if row.state != SourceState.syncing:
        row.next_sync_at = utcnow()
        await session.flush()
    return row


async def delete(
    session: AsyncSession,
    user: User,
    source_id: uuid.UUID,
    keep_documents: bool,
    settings: Settings,
    address: str | None,
) -> bool:
    """Delete the source; its documents stay in the collection as they are, or go with it
    (a worker removes them one by one: True then, the deletion is under way)."""
    row = await _locked(session, await get_managed(session, user, source_id), deleting=True)
    await _record(
        session, audit.AuditAction.source_deleted, user, row, address, kept=keep_documents
    )
    if keep_documents:
        await repository.delete_row(session, row)
        await session.flush()
        after_commit(session, partial(asyncio.to_thread, forget_cache, row, settings))
        return False
    row.state, row.claim_token, row.next_sync_at = SourceState.removing, None, utcnow()
    await session.flush()
    return True


async def items(
    session: AsyncSession,
    user: User,
    source_id: uuid.UUID,
    page: PageParams,
    *,
    failed: bool | None,
) -> tuple[Sequence[ItemRow], int]:
    row = await get_readable(session, user, source_id)
    return await paginate(session, repository.items_statement(row.id, failed), page)
