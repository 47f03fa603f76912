"""Everything of a person's, as one zip file they can take with them (`GET /me/export`).

What a person may ask for under data-protection law, and what they need to leave: their
account, the documents they uploaded (the original files), every chat with each answer's
sources, the collections they own with their members and documents, their API keys' names (never
the secrets), and the audit log's entries about them. Files are read from the storage one by
one into a temporary zip on disk, so the archive's size is bounded by the disk, not memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit_service
from docchat.audit.schemas import AuditEntryRead
from docchat.auth import api_keys
from docchat.auth.schemas import ApiKeyRead
from docchat.chats import export as chat_export
from docchat.chats import service as chats_service
from docchat.documents import repository as documents_repository
from docchat.documents.storage import FileStorage, StoredFileMissing
from docchat.kit.pagination import PageParams
from docchat.membership.models import CollectionRole
from docchat.sharing import collections as sharing
from docchat.users.models import User

PAGE = 200
T = TypeVar("T")

README = """\
Everything docchat holds of yours, as of {when}.

account.json       your account, your API keys (names and scopes; never the keys themselves)
documents.json     the documents you uploaded; their files are in documents/
chats/             every chat, as Markdown to read and JSON to process, with each answer's sources
collections.json   the collections you own: their members and documents
audit.json         what the audit log records about you (your sign-ins, changes you made, ...)
"""


async def _every(fetch: Callable[[PageParams], Awaitable[tuple[Sequence[T], int]]]) -> list[T]:
    """All rows of a paginated query, a page at a time."""
    rows: list[T] = []
    while True:
        page, total = await fetch(PageParams(skip=len(rows), limit=PAGE))
        rows.extend(page)
        if not page or len(rows) >= total:
            return rows


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _safe(name: str) -> str:
    """A file name that stays in its folder of the zip."""
    cleaned = re.sub(r"[^\w.\- ]+", "_", name).strip(" .") or "file"
    return cleaned[:120]


async def archive_of(session: AsyncSession, user: User, storage: FileStorage) -> Path:
    """The person's archive, in a temporary file of the storage's staging folder (on the data
    disk, which has room for what it holds); the caller removes it once sent."""
    await asyncio.to_thread(storage.staging.mkdir, parents=True, exist_ok=True)
    descriptor, name = await asyncio.to_thread(
        tempfile.mkstemp, prefix=".export-", suffix=".zip", dir=storage.staging
    )
    os.close(descriptor)
    path = Path(name)
    try:
        await write_archive(session, user, storage, path)
    except BaseException:
        await asyncio.to_thread(path.unlink, missing_ok=True)
        raise
    return path


async def write_archive(
    session: AsyncSession, user: User, storage: FileStorage, target: Path
) -> None:
    """Write the person's archive to `target` (a zip)."""
    # Compressing runs in a thread, one member at a time: the event loop serves others.
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        readme = README.format(when=datetime.now(UTC).isoformat(timespec="seconds"))
        await asyncio.to_thread(archive.writestr, "README.txt", readme)
        async for name, content in _sections(session, user):
            await asyncio.to_thread(archive.writestr, name, content)
        documents = await documents_repository.owned_documents(session, user.id)
        listed = []
        for document in documents:
            member = f"documents/{document.id}/{_safe(document.filename)}"
            entry: dict[str, Any] = {
                "id": str(document.id),
                "filename": document.filename,
                "content_type": document.content_type,
                "size_bytes": document.size_bytes,
                "status": str(document.status),
                "visibility": str(document.visibility),
                "created_at": document.created_at.isoformat(),
                "file": member,
            }
            try:
                async with storage.local_copy(document.storage_key) as path:
                    await asyncio.to_thread(archive.write, path, member)
            except StoredFileMissing:
                entry["file"] = None  # the storage lost it: say so rather than fail the export
            listed.append(entry)
        await asyncio.to_thread(archive.writestr, "documents.json", _json(listed))


async def _sections(session: AsyncSession, user: User) -> AsyncIterator[tuple[str, str]]:
    keys = await api_keys.list_for(session, user)
    yield (
        "account.json",
        _json(
            {
                "id": str(user.id),
                "email": user.email,
                "display_name": user.display_name,
                "role": str(user.role),
                "created_at": user.created_at.isoformat(),
                "api_keys": [
                    ApiKeyRead.model_validate(key).model_dump(mode="json") for key in keys
                ],
            }
        ),
    )
    chats = await _every(
        lambda page: chats_service.list_owned(session, user, page, archived="include")
    )
    for chat in chats:
        messages = await chats_service.all_messages(session, chat)
        yield f"chats/{chat.id}.md", chat_export.as_markdown(chat, messages)
        yield f"chats/{chat.id}.json", chat_export.as_json(chat, messages)
    readable = await _every(lambda page: sharing.list_readable(session, user, page))
    owned = []
    for collection in readable:
        if collection.role is not CollectionRole.owner or collection.builtin:
            continue
        members = await sharing.members(session, user, collection.id)
        documents = await _every(
            lambda page, c=collection.id: sharing.documents(session, user, c, page)  # type: ignore[misc]
        )
        owned.append(
            {
                **collection.model_dump(mode="json"),
                "members": [member.model_dump(mode="json") for member in members],
                "documents": [{"id": str(d.id), "filename": d.filename} for d in documents],
            }
        )
    yield "collections.json", _json(owned)
    entries = {
        entry.id: entry
        for search in (
            lambda page: audit_service.search(session, page, actor_id=user.id),
            lambda page: audit_service.search(session, page, target_id=str(user.id)),
        )
        for entry in await _every(search)
    }
    ordered = sorted(entries.values(), key=lambda entry: entry.created_at)
    yield (
        "audit.json",
        _json([AuditEntryRead.model_validate(entry).model_dump(mode="json") for entry in ordered]),
    )
