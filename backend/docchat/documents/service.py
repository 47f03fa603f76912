from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import partial

from fastapi import Request, Response, status
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.audit import service as audit
from docchat.categories import service as categories_service
from docchat.config import QuotaSettings, UrlFetchSettings
from docchat.db import utcnow
from docchat.documents import jobs_repository, repository
from docchat.documents.fetch import fetch
from docchat.documents.filetypes import FileKind, detect_kind, sanitize_filename
from docchat.documents.models import Document, DocumentStatus, DocumentVersion, Visibility
from docchat.documents.schemas import DocumentFromUrl, DocumentRead
from docchat.documents.storage import ByteSource, FileSource, FileStorage
from docchat.documents.upload_form import upload_form
from docchat.kit.errors import Conflict, Forbidden, NotFound, ServiceUnavailable
from docchat.kit.pagination import PageParams, paginate
from docchat.kit.routing import after_commit
from docchat.quotas import service as quotas
from docchat.retrieval import lexical
from docchat.retrieval.index import DocumentRef, VectorIndex, VectorStoreUnavailable
from docchat.users.models import User


async def get_readable(session: AsyncSession, user: User, document_id: uuid.UUID) -> Document:
    document = await repository.get_readable(session, user, document_id)
    if document is None:
        raise NotFound("Document not found")
    return document


async def require_readable(
    session: AsyncSession, user: User, document_ids: Sequence[uuid.UUID]
) -> list[Document]:
    """Every id must be readable by `user`: one that is not is a 404, never a silent skip."""
    wanted = list(dict.fromkeys(document_ids))
    if not wanted:
        return []
    found = await repository.readable_among(session, user, wanted)
    if len(found) != len(wanted):
        missing = set(wanted) - {document.id for document in found}
        raise NotFound(f"Document not found: {sorted(map(str, missing))[0]}")
    return found


async def list_readable(
    session: AsyncSession,
    user: User,
    page: PageParams,
    *,
    status: DocumentStatus | None = None,
    category_id: uuid.UUID | None = None,
    visibility: Visibility | None = None,
    name: str | None = None,
) -> tuple[Sequence[Document], int]:
    statement = repository.readable_by(user)
    if name:
        statement = statement.where(repository.named_like(name))
    if visibility is not None:
        statement = statement.where(Document.visibility == visibility)
    if status is not None:
        statement = statement.where(Document.status == status)
    if category_id is not None:
        statement = statement.where(Document.category_id == category_id)
    statement = statement.order_by(Document.created_at.desc(), Document.id)
    return await paginate(session, statement, page)


@dataclass(frozen=True)
class _StoredFile:
    filename: str
    kind: FileKind
    size_bytes: int
    sha256: str
    key: str


async def _store_file(
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    file: ByteSource,
    filename: str | None,
    *,
    max_bytes: int,
    quota: QuotaSettings,
    copy_of: Callable[[str], Awaitable[Document | None]],
) -> _StoredFile | Document:
    """Receive, check and keep an uploaded file; or, when `copy_of(sha256)` finds a document
    with these bytes already, that document (and nothing is kept)."""
    filename = sanitize_filename(filename)
    received = await storage.receive(file, max_bytes)
    try:
        # (A ZIP-based file's table of contents is read from disk: not on the event loop.)
        kind = await asyncio.to_thread(detect_kind, filename, received.head, received.temp_path)
        # Held until commit: a removal of the same file waits until this row is visible, and
        # so does a second upload of the same bytes, which then finds this one.
        await repository.lock_storage_key(session, received.key)
        existing = await copy_of(received.sha256)
        if existing is not None:
            return existing
        if quotas.limits_for(user, quota).storage_bytes is not None:
            # Held until commit, so that parallel uploads of one owner each count the others'
            # bytes: the check and the addition are one step.
            await repository.lock_owner_storage(session, user.id)
            stored = await repository.stored_bytes(session, user.id)
            quotas.ensure_room_for(user, quota, stored=stored, incoming_bytes=received.size_bytes)
        key = await storage.place(received)
    finally:
        await storage.discard(received)
    return _StoredFile(filename, kind, received.size_bytes, received.sha256, key)


async def add_file(
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    file: ByteSource,
    filename: str | None,
    *,
    max_bytes: int,
    quota: QuotaSettings,
    category_id: uuid.UUID | None = None,
    visibility: Visibility = Visibility.private,
    deduplicate: bool = True,
    modified: date | None = None,
) -> Upload:
    """A new document of `user` from `file`, however it came (an upload form, a fetched URL,
    a connector): stored, checked against the quota and queued for processing; the job is
    visible once the session commits. No HTTP in it. `modified`: when its source last changed
    it, if it says (its date until the file's own is read, `Document.document_date`).

    The same bytes added again by the same owner (and visibility) give back the document
    they already made, and store nothing; unless `deduplicate` is off (a source's items each
    have a document of their own, which its sync may replace or remove)."""
    if category_id is not None:
        await categories_service.get_owned(session, user, category_id)

    async def copy_of(sha256: str) -> Document | None:
        if not deduplicate:
            return None
        return await repository.live_copy(session, user.id, sha256, visibility)

    stored = await _store_file(
        session, storage, user, file, filename, max_bytes=max_bytes, quota=quota, copy_of=copy_of
    )
    if isinstance(stored, Document):
        return Upload(stored, duplicate=True)
    document = Document(
        owner_id=user.id,
        category_id=category_id,
        visibility=visibility,
        filename=stored.filename,
        content_type=stored.kind.value,
        size_bytes=stored.size_bytes,
        sha256=stored.sha256,
        storage_key=stored.key,
        status=DocumentStatus.queued,
        document_date=modified,
    )
    repository.add(session, document)
    await session.flush()
    await jobs_repository.enqueue(session, document)
    return Upload(document, duplicate=False)


async def upload_version(
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    document: Document,
    file: ByteSource,
    filename: str | None,
    *,
    max_bytes: int,
    quota: QuotaSettings,
    modified: date | None = None,
) -> Upload:
    """A new file for `document`, read beside its current content, which keeps answering
    until the new one completes and takes over (chats keep their links: the id stays).
    The same bytes as the current version change nothing (`duplicate`). `modified`: as for
    `add_file`."""
    _ensure_can_modify(user, document)
    locked = await repository.lock_live(session, document.id)  # one new version at a time
    if locked is None:
        raise NotFound("Document not found")
    if locked.status != DocumentStatus.completed:
        raise Conflict(
            f"The document is {locked.status}: a new version can replace it once it is "
            "completed (reprocess it, or upload the file as a new document)"
        )
    if await repository.version_in_progress(session, locked.id) is not None:
        raise Conflict("A new version of this document is already being read; wait for it")

    async def copy_of(sha256: str) -> Document | None:
        return locked if sha256 == locked.sha256 else None

    stored = await _store_file(
        session, storage, user, file, filename, max_bytes=max_bytes, quota=quota, copy_of=copy_of
    )
    if isinstance(stored, Document):
        return Upload(stored, duplicate=True)
    version = DocumentVersion(
        document_id=locked.id,
        number=locked.version + 1,
        filename=stored.filename,
        content_type=stored.kind.value,
        size_bytes=stored.size_bytes,
        sha256=stored.sha256,
        storage_key=stored.key,
        status=DocumentStatus.queued,
        document_date=modified,
    )
    repository.add(session, version)
    await session.flush()
    await jobs_repository.enqueue_version(session, locked, version)
    return Upload(locked, duplicate=False)


async def upload_version_from_form(
    request: Request,
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    document: Document,
    *,
    max_bytes: int,
    quota: QuotaSettings,
) -> Upload:
    """`upload_version` of the multipart form in `request` (`file`)."""
    async with upload_form(request) as form:
        return await upload_version(
            session,
            storage,
            user,
            document,
            form.file,
            form.file.filename,
            max_bytes=max_bytes,
            quota=quota,
        )


@dataclass(frozen=True)
class Upload:
    document: Document
    duplicate: bool  # the owner had uploaded these bytes already: this is that document


async def as_read(
    session: AsyncSession, documents: Sequence[Document], viewer_id: uuid.UUID
) -> list[DocumentRead]:
    """The documents as the viewer sees them, with the queue position of those waiting."""
    waiting = [document.id for document in documents if document.status == DocumentStatus.queued]
    positions = await jobs_repository.queue_positions(session, waiting)
    # Only the owner hears of new versions (their file names are the owner's business).
    owned = [document.id for document in documents if document.owner_id == viewer_id]
    versions = await repository.latest_unfinished_versions(session, owned)
    return [
        DocumentRead.for_viewer(
            document, viewer_id, positions.get(document.id), versions.get(document.id)
        )
        for document in documents
    ]


async def upload_reply(
    session: AsyncSession, upload: Upload, viewer_id: uuid.UUID, response: Response
) -> DocumentRead:
    """What an upload answers: 202 and the queued document, or 200 and the document the same
    bytes made before (`duplicate: true`)."""
    read = (await as_read(session, [upload.document], viewer_id))[0]
    if upload.duplicate:
        response.status_code = status.HTTP_200_OK
        read.duplicate = True
    return read


async def release_file(
    sessionmaker: async_sessionmaker[AsyncSession], storage: FileStorage, key: str
) -> None:
    """Remove a stored file that no live document uses any more (identical uploads share it)."""
    async with sessionmaker() as session:
        await repository.lock_storage_key(session, key)
        if not await repository.storage_key_in_use(session, key):
            await storage.remove(key)
        await session.commit()


async def upload_from_form(
    request: Request,
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    *,
    max_bytes: int,
    quota: QuotaSettings,
    visibility: Visibility = Visibility.private,
) -> Upload:
    """`add_file` of the multipart form in `request` (`file`, optional `category_id`), read now:
    the caller was authenticated before a byte of it was."""
    async with upload_form(request) as form:
        return await add_file(
            session,
            storage,
            user,
            form.file,
            form.file.filename,
            max_bytes=max_bytes,
            quota=quota,
            category_id=form.category_id,
            visibility=visibility,
        )


async def upload_from_url(
    session: AsyncSession,
    storage: FileStorage,
    user: User,
    request: DocumentFromUrl,
    *,
    max_bytes: int,
    quota: QuotaSettings,
    fetch_settings: UrlFetchSettings,
) -> Upload:
    """`add_file` of the document a URL serves, fetched under the rules of `documents.fetch`."""
    fetched = await fetch(request.url, fetch_settings, max_bytes)
    with fetched.body:
        return await add_file(
            session,
            storage,
            user,
            FileSource(fetched.body),
            fetched.filename,
            max_bytes=max_bytes,
            quota=quota,
            category_id=request.category_id,
            modified=fetched.modified,
        )


def _ensure_can_modify(user: User, document: Document) -> None:
    if document.visibility == Visibility.shared and not user.is_admin:
        raise Forbidden("Only administrators can change shared documents")
    if document.visibility == Visibility.private and document.owner_id != user.id:
        # Readable through a collection, so its existence is no secret: say why not.
        raise Forbidden("Only the owner can change this document")


async def reprocess(session: AsyncSession, user: User, document: Document) -> Document:
    _ensure_can_modify(user, document)
    if await repository.version_in_progress(session, document.id) is not None:
        raise Conflict("A new version of this document is being read; reprocess it after that")
    await jobs_repository.cancel_pending(session, document.id, utcnow())
    document.error = None
    document.pages_done = 0
    document.chunks_done = 0
    await jobs_repository.enqueue(session, document)
    await session.flush()
    return document


async def delete(
    session: AsyncSession,
    vector_index: VectorIndex,
    storage: FileStorage,
    sessionmaker: async_sessionmaker[AsyncSession],
    user: User,
    document: Document,
) -> None:
    """Soft-delete the row and remove its vectors; if the store is down nothing changes.
    Once that is committed, the file goes too unless another document shares it."""
    _ensure_can_modify(user, document)
    keys = [document.storage_key, *await repository.drop_unfinished_versions(session, document.id)]
    for key in keys:
        after_commit(session, partial(release_file, sessionmaker, storage, key))
    document.deleted_at = utcnow()
    await jobs_repository.cancel_pending(session, document.id, document.deleted_at)
    await lexical.delete_chunks(session, document.id)
    await audit.record(
        session,
        audit.AuditAction.document_deleted,
        actor=user,
        target=("document", document.id),
        filename=document.filename,
        visibility=document.visibility,
    )
    try:
        await vector_index.delete_document(DocumentRef.of(document))
    except VectorStoreUnavailable as exc:
        raise ServiceUnavailable("The vector store is unavailable; try deleting again") from exc
