from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Response, status

from docchat.auth.dependencies import ClientAddress, CurrentUser
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, SettingsDep, make_router
from docchat.sources import service
from docchat.sources.port import SOURCES
from docchat.sources.schemas import (
    SettingRead,
    SourceCreate,
    SourceItemRead,
    SourceKindRead,
    SourceRead,
    SourceUpdate,
)

# The scopes of API keys follow the collections' (upload to change, read to look).
router = make_router(tags=["collections"])


@router.get(
    "/collections/{collection_id}/sources",
    response_model=list[SourceRead],
    operation_id="sources_list",
)
async def list_sources(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> list[SourceRead]:
    """The collection's sources, each with its state, schedule and last sync's counts."""
    rows = await service.list_for_collection(session, user, collection_id)
    return [service.as_read(row) for row in rows]


@router.post(
    "/collections/{collection_id}/sources",
    response_model=SourceRead,
    status_code=status.HTTP_201_CREATED,
    operation_id="sources_create",
)
async def create_source(
    collection_id: uuid.UUID,
    data: SourceCreate,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddress,
) -> SourceRead:
    """Feed the collection from a folder on the server (administrators), an S3-compatible
    bucket prefix or a Git repository's branch or tag; its first sync starts at once, then
    every `interval_minutes`. Owners of the collection only; its files become your documents
    (your storage quota)."""
    row = await service.create(session, user, collection_id, data, settings, address)
    return service.as_read(row)


# Before `/sources/{source_id}`, which would take "kinds" for an id.
@router.get("/sources/kinds", response_model=list[SourceKindRead], operation_id="sources_kinds")
async def list_kinds(_: CurrentUser) -> list[SourceKindRead]:
    """The kinds of source this installation has, each with the settings it takes (names,
    labels, which are required, secret, or addresses): what a form for one shows."""
    return [
        SourceKindRead(
            kind=kind,
            label=connector.label,
            administrators_only=connector.administrators_only,
            settings=[SettingRead.model_validate(setting) for setting in connector.settings],
        )
        for kind, connector in SOURCES
    ]


@router.get("/sources/{source_id}", response_model=SourceRead, operation_id="sources_get")
async def get_source(source_id: uuid.UUID, user: CurrentUser, session: SessionDep) -> SourceRead:
    return service.as_read(await service.get_readable(session, user, source_id))


@router.patch("/sources/{source_id}", response_model=SourceRead, operation_id="sources_update")
async def update_source(
    source_id: uuid.UUID,
    changes: SourceUpdate,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddress,
) -> SourceRead:
    """Rename, change settings, credentials or schedule, pause (a sync under way stops at its
    next file) or resume."""
    row = await service.update(session, user, source_id, changes, settings, address)
    return service.as_read(row)


@router.post(
    "/sources/{source_id}/sync",
    response_model=SourceRead,
    status_code=status.HTTP_202_ACCEPTED,
    operation_id="sources_sync_now",
)
async def sync_now(source_id: uuid.UUID, user: CurrentUser, session: SessionDep) -> SourceRead:
    """Sync as soon as a worker is free (within SOURCES_POLL_SECONDS), not at the schedule."""
    return service.as_read(await service.sync_now(session, user, source_id))


@router.delete(
    "/sources/{source_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="sources_delete",
    responses={202: {"description": "Its documents are being removed"}},
)
async def delete_source(
    source_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddress,
    response: Response,
    keep_documents: Annotated[
        bool, Query(description="Keep its documents in the collection (else they go too)")
    ] = False,
) -> None:
    """Delete the source. Its documents go with it (202: a worker removes them, then the
    source), or stay in the collection as ordinary documents with `keep_documents=true`."""
    if await service.delete(session, user, source_id, keep_documents, settings, address):
        response.status_code = status.HTTP_202_ACCEPTED


@router.get(
    "/sources/{source_id}/items",
    response_model=Page[SourceItemRead],
    operation_id="sources_items",
)
async def list_items(
    source_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    page: PageDep,
    failed: Annotated[
        bool | None, Query(description="Only the files the last sync could not bring in")
    ] = None,
) -> Page[SourceItemRead]:
    """The files the source has brought in, by key; each failed one with its reason."""
    items, total = await service.items(session, user, source_id, page, failed=failed)
    return page_of(SourceItemRead, items, total, page)
