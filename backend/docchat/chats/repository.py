"""All SQL for chats and messages. `owned_by` is the boundary: a chat is only its owner's."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Integer,
    Row,
    Select,
    SQLColumnExpression,
    Uuid,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, distinct_on, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased, defer

from docchat.chats.models import (
    SEARCH_CONFIG,
    AnswerFeedback,
    Chat,
    ChatCollection,
    ChatDocument,
    Message,
    MessageDocument,
    MessageRole,
    MessageStatus,
    Rating,
)
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document
from docchat.kit.pagination import PageParams
from docchat.membership.access import readable_collections
from docchat.membership.models import Collection
from docchat.users.models import User


def owned_by(user_id: uuid.UUID | ColumnElement[uuid.UUID]) -> Select[Chat]:
    return select(Chat).where(Chat.owner_id == user_id, Chat.deleted_at.is_(None))


async def get_deleted_owned(
    session: AsyncSession, user_id: uuid.UUID, chat_id: uuid.UUID
) -> Chat | None:
    """The user's chat that was deleted (to restore it), or None."""
    statement = select(Chat).where(
        Chat.id == chat_id, Chat.owner_id == user_id, Chat.deleted_at.is_not(None)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def get_owned(session: AsyncSession, user_id: uuid.UUID, chat_id: uuid.UUID) -> Chat | None:
    """The user's chat (read on every request about one: the statement is built once)."""
    parameters = {"user_id": user_id, "chat_id": chat_id}
    result = await session.execute(_owned_chat(), parameters)
    return result.scalar_one_or_none()


@functools.cache
def _owned_chat() -> Select[Chat]:
    return owned_by(bindparam("user_id", type_=Uuid())).where(
        Chat.id == bindparam("chat_id", type_=Uuid())
    )


async def document_ids(session: AsyncSession, chat_id: uuid.UUID) -> list[uuid.UUID]:
    statement = select(ChatDocument.document_id).where(ChatDocument.chat_id == chat_id)
    return list((await session.execute(statement)).scalars())


class ChatLinks(NamedTuple):
    document_ids: list[uuid.UUID]
    collection_ids: list[uuid.UUID]


async def get_owned_for_message(
    session: AsyncSession, user_id: uuid.UUID, chat_id: uuid.UUID
) -> tuple[Chat, ChatLinks] | None:
    """The user's chat, locked for a message into it, with the documents and collections
    linked to it: what every message into a chat reads first, in one round trip.

    The links are read as the statement began: a message that waited for the lock while a
    document was being linked searches as if it had been sent just before the link."""
    parameters = {"user_id": user_id, "chat_id": chat_id}
    row = (await session.execute(_chat_for_message(), parameters)).one_or_none()
    if row is None:
        return None
    chat, documents, collections = row
    return chat, ChatLinks(list(documents or []), list(collections or []))


@functools.cache
def _chat_for_message() -> Select[Any]:
    documents = select(func.array_agg(ChatDocument.document_id)).where(
        ChatDocument.chat_id == Chat.id
    )
    collections = select(func.array_agg(ChatCollection.collection_id)).where(
        ChatCollection.chat_id == Chat.id
    )
    return (
        _owned_chat()
        .add_columns(documents.scalar_subquery(), collections.scalar_subquery())
        .with_for_update(of=Chat)
    )


async def link_documents(
    session: AsyncSession, chat_id: uuid.UUID, document_ids: Sequence[uuid.UUID]
) -> None:
    if not document_ids:
        return
    rows = [{"chat_id": chat_id, "document_id": document_id} for document_id in document_ids]
    await session.execute(insert(ChatDocument).values(rows).on_conflict_do_nothing())


async def unlink_document(session: AsyncSession, chat_id: uuid.UUID, document_id: uuid.UUID) -> int:
    result = await session.execute(
        delete(ChatDocument).where(
            ChatDocument.chat_id == chat_id, ChatDocument.document_id == document_id
        )
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


async def collection_ids(session: AsyncSession, chat_id: uuid.UUID) -> list[uuid.UUID]:
    statement = select(ChatCollection.collection_id).where(ChatCollection.chat_id == chat_id)
    return list((await session.execute(statement)).scalars())


async def link_collections(
    session: AsyncSession, chat_id: uuid.UUID, collection_ids: Sequence[uuid.UUID]
) -> None:
    if not collection_ids:
        return
    rows = [{"chat_id": chat_id, "collection_id": identifier} for identifier in collection_ids]
    await session.execute(insert(ChatCollection).values(rows).on_conflict_do_nothing())


async def unlink_collection(
    session: AsyncSession, chat_id: uuid.UUID, collection_id: uuid.UUID
) -> int:
    result = await session.execute(
        delete(ChatCollection).where(
            ChatCollection.chat_id == chat_id, ChatCollection.collection_id == collection_id
        )
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


async def link_message_documents(
    session: AsyncSession, message_id: uuid.UUID, document_ids: Sequence[uuid.UUID]
) -> None:
    if not document_ids:
        return
    rows = [{"message_id": message_id, "document_id": document_id} for document_id in document_ids]
    await session.execute(insert(MessageDocument).values(rows).on_conflict_do_nothing())


def messages_of(chat_id: uuid.UUID | ColumnElement[uuid.UUID]) -> Select[Message]:
    """The chat's conversation: its messages but the earlier versions of its answers."""
    return select(Message).where(Message.chat_id == chat_id, Message.superseded_by_id.is_(None))


async def message_count(session: AsyncSession, chat_id: uuid.UUID) -> int:
    statement = (
        select(func.count())
        .select_from(Message)
        .where(Message.chat_id == chat_id, Message.superseded_by_id.is_(None))
    )
    return int((await session.execute(statement)).scalar_one())


class RecentHistory(NamedTuple):
    """A chat's last exchanges as the history reads them: their text, not their sources."""

    messages: list[Message]
    # Whether the latest of those answers cited documents (a follow-up may go back to them).
    last_answer_grounded: bool


# A message as history and summaries read it: its words, not its passages or metadata (a long
# chat's hundred earlier answers hold about a megabyte of them, decoded for nothing).
_TEXT_ONLY = (defer(Message.sources, raiseload=True), defer(Message.meta, raiseload=True))
_CITES = case(
    (func.jsonb_typeof(Message.sources) == "array", func.jsonb_array_length(Message.sources) > 0),
    else_=False,
)


@functools.cache
def _recent_history() -> Select[Any]:
    """Every message's history read, built once (parameters: chat_id, before_seq, limit)."""
    return (
        messages_of(bindparam("chat_id", type_=Uuid()))
        .add_columns(_CITES)
        .options(*_TEXT_ONLY)
        .where(
            Message.seq < bindparam("before_seq"),
            Message.role.in_([MessageRole.user, MessageRole.assistant]),
            Message.status == MessageStatus.complete,
        )
        .order_by(Message.seq.desc())
        .limit(bindparam("limit", type_=Integer()))
    )


async def recent_history(
    session: AsyncSession, chat_id: uuid.UUID, *, pairs: int, before_seq: int
) -> RecentHistory:
    """The last `pairs` user/assistant exchanges before `before_seq`, oldest first; an answer
    still being written is not history yet."""
    if pairs <= 0:
        return RecentHistory([], last_answer_grounded=False)
    parameters = {"chat_id": chat_id, "before_seq": before_seq, "limit": pairs * 2}
    rows = (await session.execute(_recent_history(), parameters)).all()
    grounded = next(
        (bool(cites) for message, cites in rows if message.role == MessageRole.assistant), False
    )
    return RecentHistory([message for message, _ in reversed(rows)], grounded)


async def messages_after(
    session: AsyncSession, chat_id: uuid.UUID, *, after_seq: int, limit: int
) -> list[Message]:
    """The chat's first `limit` finished questions and answers after `after_seq`, oldest first."""
    statement = (
        messages_of(chat_id)
        .options(*_TEXT_ONLY)
        .where(
            Message.seq > after_seq,
            Message.role.in_([MessageRole.user, MessageRole.assistant]),
            Message.status == MessageStatus.complete,
        )
        .order_by(Message.seq)
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())


class SummaryState(NamedTuple):
    """A chat's summary as a fold read it."""

    summary: str | None
    through_seq: int
    updated_at: datetime | None

    @classmethod
    def of(cls, chat: Chat) -> SummaryState:
        return cls(chat.summary, chat.summary_through_seq, chat.summary_updated_at)


async def save_summary(
    session: AsyncSession,
    chat_id: uuid.UUID,
    read: SummaryState,
    *,
    summary: str,
    through_seq: int,
) -> bool:
    """Store the chat's new summary unless it changed since it was `read` (another fold, or
    an edit that made it start over): then this one is dropped, and False is returned."""
    result = await session.execute(
        update(Chat)
        .where(
            Chat.id == chat_id,
            Chat.summary_through_seq == read.through_seq,
            Chat.summary_updated_at.is_not_distinct_from(read.updated_at),
        )
        .values(summary=summary, summary_through_seq=through_seq, summary_updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def forget_summary(session: AsyncSession, chat_id: uuid.UUID, *, from_seq: int) -> None:
    """Messages from `from_seq` on are gone: the summary starts over if it covers any of them,
    and its time changes either way, so a fold under way (which may have read them) does not
    store what it wrote."""
    covers = Chat.summary_through_seq >= from_seq
    await session.execute(
        update(Chat)
        .where(Chat.id == chat_id)
        .values(
            summary=case((covers, None), else_=Chat.summary),
            summary_through_seq=case((covers, 0), else_=Chat.summary_through_seq),
            summary_updated_at=utcnow(),
        )
        .execution_options(synchronize_session=False)
    )


async def get_question(
    session: AsyncSession, chat_id: uuid.UUID, message_id: uuid.UUID
) -> Message | None:
    """One of the chat's user messages, or None."""
    statement = messages_of(chat_id).where(
        Message.id == message_id, Message.role == MessageRole.user
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def attached_document_ids(session: AsyncSession, message_id: uuid.UUID) -> list[uuid.UUID]:
    statement = select(MessageDocument.document_id).where(MessageDocument.message_id == message_id)
    return list((await session.execute(statement)).scalars())


async def remove_messages(
    session: AsyncSession, chat_id: uuid.UUID, *, from_seq: int, before_seq: int
) -> None:
    """The chat's messages from `from_seq` up to, not including, `before_seq` (an edited or
    regenerated question and what followed it); their ratings and attachments go with them.
    Earlier versions of an answer kept by `keep_as_version` stay."""
    await session.execute(
        delete(Message).where(
            Message.chat_id == chat_id,
            Message.seq >= from_seq,
            Message.seq < before_seq,
            Message.superseded_by_id.is_(None),
        )
    )


async def answer_after(
    session: AsyncSession, chat_id: uuid.UUID, question: Message
) -> Message | None:
    """The finished answer to `question` when it is the chat's last question, else None."""
    later = messages_of(chat_id).where(Message.seq > question.seq).order_by(Message.seq).limit(2)
    following = list((await session.execute(later)).scalars())
    if len(following) != 1:
        return None
    answer = following[0]
    if answer.role != MessageRole.assistant or answer.status != MessageStatus.complete:
        return None
    return answer


async def keep_as_version(
    session: AsyncSession, *, earlier_answer_id: uuid.UUID, latest_answer_id: uuid.UUID
) -> None:
    """`earlier_answer_id` and its own earlier versions become versions of the latest. Its
    rating goes: it judged an answer no longer shown (a version is not rated)."""
    await session.execute(
        delete(AnswerFeedback).where(AnswerFeedback.message_id == earlier_answer_id)
    )
    await session.execute(
        update(Message)
        .where(
            or_(
                Message.id == earlier_answer_id,
                Message.superseded_by_id == earlier_answer_id,
            )
        )
        .values(superseded_by_id=latest_answer_id)
    )


async def earlier_versions(
    session: AsyncSession, answer_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Message]]:
    """For each of these answers, its earlier versions, oldest first."""
    if not answer_ids:
        return {}
    statement = (
        select(Message).where(Message.superseded_by_id.in_(list(answer_ids))).order_by(Message.seq)
    )
    found: dict[uuid.UUID, list[Message]] = {}
    for message in (await session.execute(statement)).scalars():
        assert message.superseded_by_id is not None
        found.setdefault(message.superseded_by_id, []).append(message)
    return found


async def retitle(session: AsyncSession, chat_id: uuid.UUID, *, old: str, new: str) -> None:
    """Rename the chat to `new` if it is still called `old` (a name the user gave stays)."""
    await session.execute(
        update(Chat).where(Chat.id == chat_id, Chat.title == old).values(title=new)
    )


async def message_document_ids(session: AsyncSession, chat_id: uuid.UUID) -> list[uuid.UUID]:
    """Documents attached to any message of the chat, in the order they were first attached."""
    statement = (
        select(MessageDocument.document_id, func.min(Message.seq).label("first"))
        .join(Message, Message.id == MessageDocument.message_id)
        .where(Message.chat_id == chat_id)
        .group_by(MessageDocument.document_id)
        .order_by("first")
    )
    return [row[0] for row in (await session.execute(statement)).all()]


def add_exchange(session: AsyncSession, chat: Chat, question: str) -> tuple[Message, Message]:
    """A question at the end of `chat` and its answer's row, empty and `streaming` (from then on
    any process can show how far the answer has got). The chat becomes the most recently active
    and is no longer archived. Added, not flushed: the caller flushes them with whatever else the
    turn writes."""
    # Ids and statuses given, so that the two rows have the same columns and go in one INSERT
    # (its rows are numbered in the order given: the question first).
    asked = Message(
        id=uuid.uuid4(),
        chat_id=chat.id,
        role=MessageRole.user,
        content=question,
        status=MessageStatus.complete,
    )
    answer = Message(
        id=uuid.uuid4(),
        chat_id=chat.id,
        role=MessageRole.assistant,
        content="",
        status=MessageStatus.streaming,
    )
    session.add_all([asked, answer])
    chat.updated_at = utcnow()
    chat.archived_at = None
    return asked, answer


# -- answers in progress ---------------------------------------------------------------------


async def complete_answer(
    session: AsyncSession, chat_id: uuid.UUID, answer_id: uuid.UUID, **fields: Any
) -> Message:
    """The finished answer, written over its row (a new row if an edit removed it meanwhile)."""
    now = utcnow()
    # The chat becomes the most recently active in the same statement.
    touched = update(Chat).where(Chat.id == chat_id).values(updated_at=now).cte("touched")
    statement = (
        update(Message)
        .add_cte(touched)
        .where(Message.id == answer_id)
        .values(status=MessageStatus.complete, updated_at=now, **fields)
        .returning(Message)
        .execution_options(synchronize_session=False)
    )
    message = (await session.execute(statement)).scalar_one_or_none()
    if message is None:
        message = Message(chat_id=chat_id, role=MessageRole.assistant, **fields)
        session.add(message)
        await session.flush()
    return message


async def record_progress(
    session: AsyncSession,
    answer_id: uuid.UUID,
    *,
    content: str,
    sources: list[dict[str, Any]] | None,
    meta: dict[str, Any] | None,
) -> bool | None:
    """The text so far of an answer still being written, which also tells readers its
    process is alive, and its passages and meta when given (the research steps taken so far,
    then the passages once known). Returns whether a Stop was asked for, None when the answer
    is no longer in progress."""
    values: dict[str, Any] = {"content": content, "updated_at": func.now()}
    if sources is not None:
        values["sources"] = sources
    if meta is not None:
        values["meta"] = meta
    statement = (
        update(Message)
        .where(Message.id == answer_id, Message.status == MessageStatus.streaming)
        .values(**values)
        .returning(Message.stop_requested)
    )
    stop: bool | None = (await session.execute(statement)).scalar_one_or_none()
    return stop


async def discard_answer(session: AsyncSession, answer_id: uuid.UUID) -> None:
    """An answer that failed or was stopped before its first word: the question stays alone."""
    await session.execute(
        delete(Message).where(Message.id == answer_id, Message.status == MessageStatus.streaming)
    )


async def request_stop(session: AsyncSession, answer_id: uuid.UUID) -> bool:
    """Ask whichever process writes the answer to stop it; False if it is not in progress."""
    statement = (
        update(Message)
        .where(Message.id == answer_id, Message.status == MessageStatus.streaming)
        .values(stop_requested=True)
        .returning(Message.id)
    )
    return (await session.execute(statement)).scalar_one_or_none() is not None


async def get_owned_answer(
    session: AsyncSession, user_id: uuid.UUID, answer_id: uuid.UUID
) -> Message | None:
    """One of the user's answers (in a chat not deleted), fresh from the database."""
    statement = (
        select(Message)
        .join(Chat, Chat.id == Message.chat_id)
        .where(
            Message.id == answer_id,
            Message.role == MessageRole.assistant,
            Chat.owner_id == user_id,
            Chat.deleted_at.is_(None),
        )
        .execution_options(populate_existing=True)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def question_of(session: AsyncSession, answer: Message) -> Message | None:
    """The question an answer answers: the user message just before it."""
    statement = (
        messages_of(answer.chat_id)
        .where(Message.seq < answer.seq, Message.role == MessageRole.user)
        .order_by(Message.seq.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


INTERRUPTED = {"stopped": True, "interrupted": True}


def silent_for(seconds: float) -> ColumnElement[bool]:
    """The answer's row has not been written for `seconds` (by the database's clock)."""
    return Message.updated_at < func.now() - func.make_interval(0, 0, 0, 0, 0, 0, seconds)


async def end_abandoned_answers(
    session: AsyncSession,
    *,
    silent_for_seconds: float,
    answer_id: uuid.UUID | None = None,
    chat_id: uuid.UUID | None = None,
) -> int:
    """Answers whose process stopped writing (a crash, a kill) more than `silent_for_seconds`
    ago: kept as far as they got, marked stopped and interrupted; dropped if still empty."""
    silent = Message.updated_at < func.now() - func.make_interval(
        0, 0, 0, 0, 0, 0, silent_for_seconds
    )
    abandoned = [Message.status == MessageStatus.streaming, silent]
    if answer_id is not None:
        abandoned.append(Message.id == answer_id)
    if chat_id is not None:
        abandoned.append(Message.chat_id == chat_id)
    dropped = await session.execute(delete(Message).where(*abandoned, Message.content == ""))
    ended = await session.execute(
        update(Message)
        .where(*abandoned)
        .values(
            status=MessageStatus.complete,
            meta=func.coalesce(Message.meta, cast({}, JSONB)).op("||")(cast(INTERRUPTED, JSONB)),
        )
        .execution_options(synchronize_session=False)
    )
    return sum(int(getattr(result, "rowcount", 0) or 0) for result in (dropped, ended))


def _search_vector(column: SQLColumnExpression[str]) -> ColumnElement[Any]:
    # The configuration as a constant in the statement: only then does the index match it.
    return func.to_tsvector(literal_column(f"'{SEARCH_CONFIG}'::regconfig"), column)


def matching(query: str) -> ColumnElement[bool]:
    """Chats whose title or any message matches `query` (web-search syntax)."""
    terms = func.websearch_to_tsquery(literal_column(f"'{SEARCH_CONFIG}'::regconfig"), query)
    in_messages = (
        select(Message.id)
        .where(
            Message.chat_id == Chat.id,
            Message.superseded_by_id.is_(None),
            _search_vector(Message.content).op("@@")(terms),
        )
        .exists()
    )
    in_title = _search_vector(Chat.title).op("@@")(terms)
    return or_(in_title, in_messages)


# The words around a match, as ts_headline cuts them (no markup: the web app shows text).
SNIPPET_OPTIONS = "MaxWords=20, MinWords=8, MaxFragments=1, StartSel='', StopSel=''"
SHORT_MESSAGE_CHARS = 160


async def snippets(
    session: AsyncSession, chat_ids: Sequence[uuid.UUID], query: str
) -> dict[uuid.UUID, str]:
    """For each chat, the words around `query` in its latest matching message (chats found by
    their title alone have none)."""
    if not chat_ids:
        return {}
    config: ColumnElement[Any] = literal_column(f"'{SEARCH_CONFIG}'::regconfig")
    terms = func.websearch_to_tsquery(config, query)
    statement = (
        select(
            Message.chat_id,
            # A short message is its own snippet (ts_headline cuts those oddly).
            case(
                (func.length(Message.content) <= SHORT_MESSAGE_CHARS, Message.content),
                else_=func.ts_headline(config, Message.content, terms, SNIPPET_OPTIONS),
            ),
        )
        .where(
            Message.chat_id.in_(chat_ids),
            Message.superseded_by_id.is_(None),
            _search_vector(Message.content).op("@@")(terms),
        )
        .order_by(Message.chat_id, Message.seq.desc())
        .ext(distinct_on(Message.chat_id))
    )
    return {chat_id: text for chat_id, text in (await session.execute(statement)).all()}


# -- ratings of answers ----------------------------------------------------------------------


async def get_answer(
    session: AsyncSession, chat_id: uuid.UUID, message_id: uuid.UUID
) -> Message | None:
    statement = select(Message).where(
        Message.id == message_id,
        Message.chat_id == chat_id,
        Message.role == MessageRole.assistant,
        Message.superseded_by_id.is_(None),
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def save_feedback(
    session: AsyncSession,
    message_id: uuid.UUID,
    user_id: uuid.UUID,
    rating: Rating,
    comment: str | None,
) -> AnswerFeedback:
    """The answer's rating, made or replaced (one per answer)."""
    statement = insert(AnswerFeedback).values(
        message_id=message_id, user_id=user_id, rating=rating, comment=comment
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[AnswerFeedback.message_id],
            set_={"rating": rating, "comment": comment, "updated_at": utcnow()},
        )
    )
    rated = await session.get(AnswerFeedback, message_id, populate_existing=True)
    assert rated is not None
    return rated


async def delete_feedback(session: AsyncSession, message_id: uuid.UUID) -> None:
    await session.execute(delete(AnswerFeedback).where(AnswerFeedback.message_id == message_id))


async def feedback_of(
    session: AsyncSession, message_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, AnswerFeedback]:
    statement = select(AnswerFeedback).where(AnswerFeedback.message_id.in_(list(message_ids)))
    return {row.message_id: row for row in (await session.execute(statement)).scalars()}


def _feedback_review(rating: Rating | None) -> Select[AnswerFeedback, Message, str, str]:
    """Ratings of answers in chats that still exist, each with its answer, its author's email
    and the question it replied to (the last user message before it)."""
    answer = aliased(Message)
    asked = aliased(Message)
    question = (
        select(asked.content)
        .where(
            asked.chat_id == answer.chat_id,
            asked.role == MessageRole.user,
            asked.seq < answer.seq,
        )
        .order_by(asked.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    statement = (
        select(AnswerFeedback, answer, User.email, question.label("question"))
        .join(answer, answer.id == AnswerFeedback.message_id)
        .join(Chat, Chat.id == answer.chat_id)
        .join(User, User.id == AnswerFeedback.user_id)
        .where(Chat.deleted_at.is_(None))
    )
    if rating is not None:
        statement = statement.where(AnswerFeedback.rating == rating)
    return statement


async def feedback_page(
    session: AsyncSession, page: PageParams, rating: Rating | None
) -> tuple[list[Row[AnswerFeedback, Message, str, str]], int]:
    """One page of ratings (feedback, answer, author's email, question), newest first, and
    how many there are."""
    statement = _feedback_review(rating)
    count = select(func.count()).select_from(statement.order_by(None).subquery())
    total = int((await session.execute(count)).scalar_one())
    ordered = (
        statement.order_by(AnswerFeedback.updated_at.desc(), AnswerFeedback.message_id)
        .offset(page.skip)
        .limit(page.limit)
    )
    return list((await session.execute(ordered)).all()), total


def add_chat(session: AsyncSession, chat: Chat) -> None:
    session.add(chat)


async def get_live(session: AsyncSession, chat_id: uuid.UUID) -> Chat | None:
    """The chat unless it was deleted, whoever owns it (for background work)."""
    statement = select(Chat).where(Chat.id == chat_id, Chat.deleted_at.is_(None))
    return (await session.execute(statement)).scalar_one_or_none()


async def all_messages(session: AsyncSession, chat_id: uuid.UUID) -> Sequence[Message]:
    """Every message of the chat, oldest first."""
    return (await session.execute(messages_of(chat_id).order_by(Message.seq))).scalars().all()


async def readable_documents_by_name(
    session: AsyncSession, user: User, document_ids: Sequence[uuid.UUID]
) -> list[Document]:
    """Those of the documents the user may read, by name."""
    statement = (
        documents_repository.readable_by(user)
        .where(Document.id.in_(list(document_ids)))
        .order_by(Document.filename, Document.id)
    )
    return list((await session.execute(statement)).scalars())


async def readable_collection_ids(
    session: AsyncSession, user: User, collection_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of the collections the user may read."""
    statement = readable_collections(user).where(Collection.id.in_(list(collection_ids)))
    return {collection.id for collection in (await session.execute(statement)).scalars()}


async def last_complete_seq(session: AsyncSession, chat_id: uuid.UUID) -> int:
    """The place of the chat's last complete message (0: none)."""
    last = select(func.max(Message.seq)).where(
        Message.chat_id == chat_id, Message.status == MessageStatus.complete
    )
    return (await session.execute(last)).scalar_one_or_none() or 0


async def shared_chat(session: AsyncSession, share_id: uuid.UUID) -> tuple[Chat, User] | None:
    """The live chat a link leads to, with its owner, while that owner's account is active."""
    statement = (
        select(Chat, User)
        .join(User, User.id == Chat.owner_id)
        .where(Chat.share_id == share_id, Chat.deleted_at.is_(None), User.is_active.is_(True))
    )
    row = (await session.execute(statement)).one_or_none()
    return None if row is None else (row[0], row[1])


async def went_silent(session: AsyncSession, answer_id: uuid.UUID, seconds: float) -> bool:
    """Whether the answer is still streaming with no word from its process for `seconds`."""
    quiet = select(Message.id).where(
        Message.id == answer_id, Message.status == MessageStatus.streaming, silent_for(seconds)
    )
    return (await session.execute(quiet)).scalar_one_or_none() is not None
