from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Request, Response, status
from fastapi.responses import FileResponse

from docchat.auth.dependencies import CurrentUser
from docchat.documents import service
from docchat.documents.dependencies import ReadableDocument, StorageDep, VectorIndexDep
from docchat.documents.models import DocumentStatus, Visibility
from docchat.documents.schemas import (
    DocumentFromUrl,
    DocumentRead,
    FileFormatRead,
    PassagePage,
    PassageRead,
)
from docchat.documents.upload_form import UPLOAD_REQUEST_BODY
from docchat.extraction.kinds import FORMATS, writes_markdown
from docchat.kit.pagination import Page, PageDep
from docchat.kit.routing import SessionDep, SessionmakerDep, SettingsDep, make_router
from docchat.retrieval import lexical

router = make_router(prefix="/documents", tags=["documents"])


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DocumentRead,
    operation_id="documents_upload",
    openapi_extra={"requestBody": UPLOAD_REQUEST_BODY},
    responses={
        status.HTTP_200_OK: {
            "model": DocumentRead,
            "description": "The same bytes were uploaded before: that document, `duplicate: true`",
        },
    },
)
async def upload_document(
    request: Request,
    response: Response,
    user: CurrentUser,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
) -> DocumentRead:
    """Store the file and process it in the background; poll the document for its status.

    The body (multipart: `file`, optional `category_id`) is read only once the caller is
    authenticated."""
    upload = await service.upload_from_form(
        request,
        session,
        storage,
        user,
        max_bytes=settings.max_upload_bytes,
        quota=settings.quota,
    )
    return await service.upload_reply(session, upload, user.id, response)


@router.post(
    "/from-url",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DocumentRead,
    operation_id="documents_from_url",
    responses={
        status.HTTP_200_OK: {
            "model": DocumentRead,
            "description": "The URL served bytes uploaded before: that document, `duplicate: true`",
        },
    },
)
async def add_document_from_url(
    data: DocumentFromUrl,
    response: Response,
    user: CurrentUser,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
) -> DocumentRead:
    """Fetch a web page or file from an http(s) URL and process it like an upload.

    Addresses on private, loopback or link-local networks are refused unless an administrator
    allowed the host; the upload size limit and a time limit apply."""
    upload = await service.upload_from_url(
        session,
        storage,
        user,
        data,
        max_bytes=settings.max_upload_bytes,
        quota=settings.quota,
        fetch_settings=settings.url_fetch,
    )
    return await service.upload_reply(session, upload, user.id, response)


@router.get("/formats", response_model=list[FileFormatRead], operation_id="documents_formats")
async def list_formats(_: CurrentUser) -> list[FileFormatRead]:
    """The kinds of file docchat reads (uploads of others are refused with a 415 that lists
    these): what a client offers in its file picker."""
    return [
        FileFormatRead(
            kind=entry.kind.value,
            label=entry.label,
            suffixes=[suffix for suffix in entry.suffixes if suffix],
            parts=list(entry.parts) if entry.parts else None,
        )
        for entry in FORMATS.values()
    ]


@router.get("", response_model=Page[DocumentRead], operation_id="documents_list")
async def list_documents(
    user: CurrentUser,
    session: SessionDep,
    page: PageDep,
    status: Annotated[DocumentStatus | None, Query()] = None,
    category_id: Annotated[uuid.UUID | None, Query()] = None,
    visibility: Annotated[
        Visibility | None,
        Query(description="shared: only the documents shared with everyone"),
    ] = None,
    name: Annotated[
        str | None,
        Query(
            max_length=200, description="Only documents whose file name contains this (any case)"
        ),
    ] = None,
) -> Page[DocumentRead]:
    items, total = await service.list_readable(
        session,
        user,
        page,
        status=status,
        category_id=category_id,
        visibility=visibility,
        name=name,
    )
    return Page(
        items=await service.as_read(session, items, user.id),
        total=total,
        skip=page.skip,
        limit=page.limit,
    )


@router.get("/{document_id}", response_model=DocumentRead, operation_id="documents_get")
async def get_document(
    document: ReadableDocument, user: CurrentUser, session: SessionDep
) -> DocumentRead:
    return (await service.as_read(session, [document], user.id))[0]


@router.get(
    "/{document_id}/file",
    response_class=FileResponse,
    operation_id="documents_file",
    responses={200: {"content": {"application/pdf": {}, "text/plain": {}}}},
)
async def download_document(document: ReadableDocument, storage: StorageDep) -> Response:
    """The original file, shown inline (append `#page=N` to open a PDF at a page)."""
    return await storage.response(document.storage_key, document.content_type, document.filename)


@router.get(
    "/{document_id}/passages",
    response_model=PassagePage,
    operation_id="documents_passages",
)
async def document_passages(
    document: ReadableDocument, session: SessionDep, page: PageDep
) -> PassagePage:
    """The document's text as it was read, chunk by chunk in reading order (`skip` is a chunk
    index): what the in-app viewer shows around a cited passage. Consecutive chunks overlap
    by up to `RAG_CHUNK_OVERLAP` characters. `markdown` says whether the text is Markdown."""
    items, total = await lexical.passages(session, document.id, page.skip, page.limit)
    return PassagePage(
        items=[PassageRead.model_validate(item) for item in items],
        total=total,
        skip=page.skip,
        limit=page.limit,
        markdown=writes_markdown(document.content_type),
    )


@router.post(
    "/{document_id}/reprocess",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DocumentRead,
    operation_id="documents_reprocess",
)
async def reprocess_document(
    document: ReadableDocument, user: CurrentUser, session: SessionDep
) -> DocumentRead:
    reprocessed = await service.reprocess(session, user, document)
    return (await service.as_read(session, [reprocessed], user.id))[0]


@router.post(
    "/{document_id}/versions",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DocumentRead,
    operation_id="documents_upload_version",
    openapi_extra={"requestBody": UPLOAD_REQUEST_BODY},
    responses={
        status.HTTP_200_OK: {
            "model": DocumentRead,
            "description": "The file is the current version's: nothing changes, `duplicate: true`",
        },
        status.HTTP_409_CONFLICT: {
            "description": "The document is not completed, or a new version is being read"
        },
    },
)
async def upload_document_version(
    request: Request,
    response: Response,
    document: ReadableDocument,
    user: CurrentUser,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
) -> DocumentRead:
    """Replace the document's content with a new file (multipart: `file`), in place.

    The document keeps its id, so chats and collections keep it; its current content answers
    until the new version completes, then the new one answers instead, in one step, and
    `version` goes up by one. `new_version` shows the new file's progress (or why it failed:
    the current content then stays)."""
    upload = await service.upload_version_from_form(
        request,
        session,
        storage,
        user,
        document,
        max_bytes=settings.max_upload_bytes,
        quota=settings.quota,
    )
    return await service.upload_reply(session, upload, user.id, response)


@router.delete(
    "/{document_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="documents_delete"
)
async def delete_document(
    document: ReadableDocument,
    user: CurrentUser,
    session: SessionDep,
    index: VectorIndexDep,
    storage: StorageDep,
    sessionmaker: SessionmakerDep,
) -> None:
    await service.delete(session, index, storage, sessionmaker, user, document)
