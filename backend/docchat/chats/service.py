from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import flag_modified

from docchat.audit import service as audit
from docchat.categories import service as categories_service
from docchat.chats import repository
from docchat.chats.models import Chat, Message, MessageStatus
from docchat.chats.schemas import AnswerVersion, ChatUpdate, MessageRead
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents import service as documents_service
from docchat.documents.models import Document
from docchat.kit.errors import NotFound
from docchat.kit.pagination import PageParams, paginate
from docchat.sharing import collections as sharing
from docchat.users.models import User

# A deleted chat can be brought back for this long (its rows stay; see `restore`).
RESTORE_DAYS = 30

TITLE_CHARS = 50

# Which chats a list shows by archive state; see `list_owned`.
ArchivedFilter = Literal["exclude", "only", "include"]


def title_from(content: str) -> str:
    """A chat's name from its first question: on one line, at most `TITLE_CHARS` characters,
    ended at a word and marked "…" when the question goes on (a cut in mid-word made rows of
    similar questions look alike)."""
    single_line = " ".join(content.split())
    if len(single_line) <= TITLE_CHARS:
        return single_line or "New chat"
    kept = single_line[: TITLE_CHARS - 1]  # room for the "…"
    if single_line[TITLE_CHARS - 1] != " ":
        words, _, _ = kept.rpartition(" ")
        # One word longer than half the title is cut where it must be.
        kept = words if len(words) >= TITLE_CHARS // 2 else kept
    return kept.rstrip(" ,;:-–—") + "…"


def named_after(title: str, content: str) -> bool:
    """The chat still has the name its first question gave it (by this rule or the earlier one,
    which cut at 50 characters): the user did not rename it."""
    return title in (title_from(content), " ".join(content.split())[:TITLE_CHARS])


async def get_owned(session: AsyncSession, user: User, chat_id: uuid.UUID) -> Chat:
    chat = await repository.get_owned(session, user.id, chat_id)
    if chat is None:
        raise NotFound("Chat not found")
    return chat


async def get_owned_for_message(
    session: AsyncSession, user: User, chat_id: uuid.UUID
) -> tuple[Chat, repository.ChatLinks]:
    """The user's chat, locked for a message into it, with what is linked to it."""
    found = await repository.get_owned_for_message(session, user.id, chat_id)
    if found is None:
        raise NotFound("Chat not found")
    return found


async def create(
    session: AsyncSession,
    user: User,
    *,
    title: str,
    category_id: uuid.UUID | None = None,
    document_ids: Sequence[uuid.UUID] = (),
    collection_ids: Sequence[uuid.UUID] = (),
) -> Chat:
    if category_id is not None:
        await categories_service.get_owned(session, user, category_id)
    documents = await documents_service.require_readable(session, user, document_ids)
    collections = await sharing.require_readable(session, user, collection_ids)
    chat = Chat(owner_id=user.id, title=title, category_id=category_id)
    repository.add_chat(session, chat)
    await session.flush()
    await repository.link_documents(session, chat.id, [d.id for d in documents])
    await repository.link_collections(session, chat.id, collections)
    return chat


async def list_owned(
    session: AsyncSession,
    user: User,
    page: PageParams,
    *,
    category_id: uuid.UUID | None = None,
    query: str | None = None,
    archived: ArchivedFilter | None = None,
) -> tuple[Sequence[Chat], int]:
    """The user's chats, pinned ones first, then most recently active first; with `query`,
    only those whose title or messages match it (full-text search: words in any form, "quoted
    phrases", -excluded). Archived chats are left out of the list but found by a search, unless
    `archived` says otherwise."""
    searching = bool(query and query.strip())
    statement = repository.owned_by(user.id)
    if category_id is not None:
        statement = statement.where(Chat.category_id == category_id)
    if query and searching:
        statement = statement.where(repository.matching(query.strip()))
    match archived or ("include" if searching else "exclude"):
        case "exclude":
            statement = statement.where(Chat.archived_at.is_(None))
        case "only":
            statement = statement.where(Chat.archived_at.is_not(None))
    statement = statement.order_by(
        Chat.pinned_at.desc().nulls_last(), Chat.updated_at.desc(), Chat.id
    )
    return await paginate(session, statement, page)


async def snippets(
    session: AsyncSession, chat_ids: Sequence[uuid.UUID], query: str
) -> dict[uuid.UUID, str]:
    """Where each of these chats (already the user's) matches a search."""
    return await repository.snippets(session, chat_ids, query)


async def update(session: AsyncSession, user: User, chat: Chat, changes: ChatUpdate) -> Chat:
    fields = changes.model_dump(exclude_unset=True)
    if "category_id" in fields and fields["category_id"] is not None:
        await categories_service.get_owned(session, user, fields["category_id"])
    now = utcnow()
    # Pinning and archiving arrange the list; they are not activity, so they keep its place.
    if (pinned := fields.pop("pinned", None)) is not None:
        chat.pinned_at = (chat.pinned_at or now) if pinned else None
    if (archived := fields.pop("archived", None)) is not None:
        chat.archived_at = (chat.archived_at or now) if archived else None
    for name, value in fields.items():
        if name == "title" and value is None:
            continue
        setattr(chat, name, value or None if name == "model" else value)
    if fields:
        chat.updated_at = now
    else:
        flag_modified(chat, "updated_at")  # written as it is, so its `onupdate` does not fire
    await session.flush()
    return chat


async def _described(session: AsyncSession, chat: Chat) -> dict[str, Any]:
    """What the audit log says of a chat: its size and age, never its words (administrators
    read the log; the chat's title is its first question)."""
    return {
        "messages": await repository.message_count(session, chat.id),
        "created": chat.created_at.date().isoformat(),
    }


async def delete(session: AsyncSession, user: User, chat: Chat, address: str | None) -> None:
    chat.deleted_at = utcnow()
    target = ("chat", chat.id)
    await audit.record(
        session,
        audit.AuditAction.chat_deleted,
        actor=user,
        target=target,
        address=address,
        **await _described(session, chat),
    )


async def restore(
    session: AsyncSession, user: User, chat_id: uuid.UUID, address: str | None
) -> Chat:
    """Undo a deletion (the chat comes back with its messages and links) within
    `RESTORE_DAYS`; later, or for a chat that is not the user's, 404."""
    chat = await repository.get_deleted_owned(session, user.id, chat_id)
    if chat is None or chat.deleted_at is None:
        raise NotFound("No deleted chat of yours with that id")
    if utcnow() - chat.deleted_at > timedelta(days=RESTORE_DAYS):
        raise NotFound(f"The chat was deleted more than {RESTORE_DAYS} days ago")
    chat.deleted_at = None
    await session.flush()
    target = ("chat", chat.id)
    await audit.record(
        session,
        audit.AuditAction.chat_restored,
        actor=user,
        target=target,
        address=address,
        **await _described(session, chat),
    )
    return chat


async def document_ids(session: AsyncSession, chat: Chat) -> list[uuid.UUID]:
    return await repository.document_ids(session, chat.id)


async def linked_documents(session: AsyncSession, user: User, chat: Chat) -> list[Document]:
    """The chat's linked documents that the user may still read, by name."""
    linked = await repository.document_ids(session, chat.id)
    if not linked:
        return []
    return await repository.readable_documents_by_name(session, user, linked)


async def link_documents(
    session: AsyncSession, user: User, chat: Chat, document_ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    documents = await documents_service.require_readable(session, user, document_ids)
    await repository.link_documents(session, chat.id, [d.id for d in documents])
    chat.updated_at = utcnow()
    await session.flush()
    return await repository.document_ids(session, chat.id)


async def collection_ids(session: AsyncSession, user: User, chat: Chat) -> list[uuid.UUID]:
    """The chat's linked collections that the user may still read."""
    linked = await repository.collection_ids(session, chat.id)
    return await readable_collection_ids(session, user, linked)


async def readable_collection_ids(
    session: AsyncSession, user: User, linked: list[uuid.UUID]
) -> list[uuid.UUID]:
    """Those of the `linked` collections the user may still read, in their order."""
    if not linked:
        return []
    readable = await repository.readable_collection_ids(session, user, linked)
    return [identifier for identifier in linked if identifier in readable]


async def link_collection(
    session: AsyncSession, user: User, chat: Chat, collection_id: uuid.UUID
) -> None:
    await sharing.require_readable(session, user, [collection_id])
    await repository.link_collections(session, chat.id, [collection_id])
    chat.updated_at = utcnow()
    await session.flush()


async def unlink_collection(session: AsyncSession, chat: Chat, collection_id: uuid.UUID) -> None:
    if await repository.unlink_collection(session, chat.id, collection_id) == 0:
        raise NotFound("That collection is not linked to this chat")


async def unlink_document(session: AsyncSession, chat: Chat, document_id: uuid.UUID) -> None:
    if await repository.unlink_document(session, chat.id, document_id) == 0:
        raise NotFound("That document is not linked to this chat")


async def all_messages(session: AsyncSession, chat: Chat) -> Sequence[Message]:
    """Every message of the chat, oldest first (for exports)."""
    return await repository.all_messages(session, chat.id)


async def list_messages(
    session: AsyncSession, chat: Chat, page: PageParams, *, silent_seconds: float
) -> tuple[Sequence[Message], int]:
    """A page of the chat's messages; an answer still `streaming` whose process has gone
    silent for `silent_seconds` is ended first (kept as far as it got, marked interrupted)."""
    statement = repository.messages_of(chat.id).order_by(Message.seq)
    items, total = await paginate(session, statement, page)
    if any(message.status == MessageStatus.streaming for message in items):
        ended = await repository.end_abandoned_answers(
            session, silent_for_seconds=silent_seconds, chat_id=chat.id
        )
        if ended:
            await session.commit()
            session.expire_all()
            items, total = await paginate(session, statement, page)
    return items, total


async def mark_unreadable(
    session: AsyncSession, user: User, messages: Sequence[MessageRead]
) -> None:
    """Sets `readable` on every source of these answers (and of their earlier versions): false
    where `user` may no longer read the document, so the app offers no "Open document" that
    could only fail."""
    sources = [
        source
        for message in messages
        for listed in (message.sources, *(version.sources for version in message.versions))
        for source in listed or []
    ]
    if not sources:
        return
    cited = list({source.document_id for source in sources})
    readable = {d.id for d in await documents_repository.readable_among(session, user, cited)}
    for source in sources:
        source.readable = source.document_id in readable


async def earlier_versions(
    session: AsyncSession, answer_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[AnswerVersion]]:
    """Each answer's earlier versions (kept by regenerations), oldest first."""
    found = await repository.earlier_versions(session, answer_ids)
    return {
        answer_id: [AnswerVersion.model_validate(version) for version in versions]
        for answer_id, versions in found.items()
    }
