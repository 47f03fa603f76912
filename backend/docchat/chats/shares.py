"""Chats shared read-only by link inside the installation.

A link shows the chat's messages up to the last one when it was made (asked again later, the
owner updates it); any signed-in user of the installation with the link may read them, and
sees each source only if they may read its document themselves (in its place, nothing)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.chats import repository
from docchat.chats.models import Chat, Message, MessageStatus
from docchat.chats.schemas import SharedMessage
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.kit.errors import NotFound
from docchat.kit.pagination import PageParams, paginate
from docchat.retrieval.schemas import Source
from docchat.users.models import User

NOT_SHARED = (
    "This link does not lead to a shared chat: it was turned off, the chat deleted, or its "
    "owner's account deactivated"
)


async def share(session: AsyncSession, user: User, chat: Chat, address: str | None) -> Chat:
    """Share `chat` through everything asked so far: a new link, or the same one brought up to
    date (its address does not change)."""
    chat.shared_through_seq = await repository.last_complete_seq(session, chat.id)
    chat.share_id = chat.share_id or uuid.uuid4()
    chat.shared_at = utcnow()
    await audit.record(
        session,
        audit.AuditAction.chat_shared,
        actor=user,
        target=("chat", chat.id),
        address=address,
        messages=await repository.message_count(session, chat.id),
    )
    await session.flush()
    return chat


async def unshare(session: AsyncSession, user: User, chat: Chat, address: str | None) -> None:
    """Turn the link off: it leads nowhere from now on (sharing again makes a new one)."""
    if chat.share_id is None:
        return
    chat.share_id = chat.shared_at = chat.shared_through_seq = None
    await audit.record(
        session,
        audit.AuditAction.chat_unshared,
        actor=user,
        target=("chat", chat.id),
        address=address,
    )
    await session.flush()


async def get_shared(session: AsyncSession, share_id: uuid.UUID) -> tuple[Chat, User]:
    """The chat a link leads to, with its owner; 404 once the link is off, the chat deleted
    or its owner's account deactivated (as their sessions and keys, until it is active again)."""
    shared = await repository.shared_chat(session, share_id)
    if shared is None:
        raise NotFound(NOT_SHARED)
    return shared


async def shared_messages(
    session: AsyncSession, reader: User, chat: Chat, page: PageParams
) -> tuple[list[SharedMessage], int]:
    """A page of the messages the link shows, each answer's sources as `reader` may see them:
    in citation order, one whose document the reader may not read replaced by None."""
    statement = (
        repository.messages_of(chat.id)
        .where(
            Message.seq <= (chat.shared_through_seq or 0),
            Message.status == MessageStatus.complete,
        )
        .order_by(Message.seq)
    )
    items, total = await paginate(session, statement, page)
    readable = await _readable(session, reader, _cited(items))
    return [_as_shared(message, readable) for message in items], total


def _cited(messages: Sequence[Message]) -> set[uuid.UUID]:
    return {
        uuid.UUID(str(source["document_id"]))
        for message in messages
        for source in message.sources or []
    }


async def _readable(
    session: AsyncSession, reader: User, document_ids: set[uuid.UUID]
) -> set[uuid.UUID]:
    if not document_ids:
        return set()
    found = await documents_repository.readable_among(session, reader, list(document_ids))
    return {document.id for document in found}


def _as_shared(message: Message, readable: set[uuid.UUID]) -> SharedMessage:
    sources = None
    if message.sources is not None:
        sources = [
            Source.model_validate(source)
            if uuid.UUID(str(source["document_id"])) in readable
            else None
            for source in message.sources
        ]
    return SharedMessage(
        id=message.id,
        role=message.role,
        content=message.content,
        sources=sources,
        stopped=bool((message.meta or {}).get("stopped")),
        created_at=message.created_at,
    )
