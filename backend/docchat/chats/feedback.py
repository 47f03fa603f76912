"""Ratings of answers: the chat's owner rates an answer up or down (with an optional comment);
administrators review the ratings with the question, the answer and its sources."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Select, delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from docchat.chats.models import AnswerFeedback, Chat, Message, MessageRole, Rating
from docchat.chats.schemas import FeedbackEntry, FeedbackWrite
from docchat.db import utcnow
from docchat.kit.errors import NotFound
from docchat.kit.pagination import PageParams
from docchat.users.models import User


async def _answer_in(session: AsyncSession, chat: Chat, message_id: uuid.UUID) -> Message:
    statement = select(Message).where(
        Message.id == message_id,
        Message.chat_id == chat.id,
        Message.role == MessageRole.assistant,
    )
    answer = (await session.execute(statement)).scalar_one_or_none()
    if answer is None:
        raise NotFound("No such answer in this chat")
    return answer


async def rate(
    session: AsyncSession, user: User, chat: Chat, message_id: uuid.UUID, data: FeedbackWrite
) -> AnswerFeedback:
    """Rate an answer of the user's own chat; rating it again replaces the earlier rating."""
    answer = await _answer_in(session, chat, message_id)
    comment = (data.comment or "").strip() or None
    statement = insert(AnswerFeedback).values(
        message_id=answer.id, user_id=user.id, rating=data.rating, comment=comment
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[AnswerFeedback.message_id],
            set_={"rating": data.rating, "comment": comment, "updated_at": utcnow()},
        )
    )
    rated = await session.get(AnswerFeedback, answer.id, populate_existing=True)
    assert rated is not None
    return rated


async def withdraw(session: AsyncSession, chat: Chat, message_id: uuid.UUID) -> None:
    answer = await _answer_in(session, chat, message_id)
    await session.execute(delete(AnswerFeedback).where(AnswerFeedback.message_id == answer.id))


async def of_messages(
    session: AsyncSession, message_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, AnswerFeedback]:
    if not message_ids:
        return {}
    statement = select(AnswerFeedback).where(AnswerFeedback.message_id.in_(list(message_ids)))
    return {row.message_id: row for row in (await session.execute(statement)).scalars()}


def _review(rating: Rating | None) -> Select[AnswerFeedback, Message, str, str | None]:
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


async def review(
    session: AsyncSession, page: PageParams, rating: Rating | None = None
) -> tuple[list[FeedbackEntry], int]:
    """One page of ratings, newest first, for administrators."""
    statement = _review(rating)
    count = select(func.count()).select_from(statement.order_by(None).subquery())
    total = int((await session.execute(count)).scalar_one())
    ordered = (
        statement.order_by(AnswerFeedback.updated_at.desc(), AnswerFeedback.message_id)
        .offset(page.skip)
        .limit(page.limit)
    )
    entries = [
        FeedbackEntry(
            message_id=feedback.message_id,
            chat_id=answer.chat_id,
            user_id=feedback.user_id,
            user_email=email,
            rating=feedback.rating,
            comment=feedback.comment,
            question=question,
            answer=answer.content,
            sources=answer.sources,
            model=answer.model,
            answered_at=answer.created_at,
            updated_at=feedback.updated_at,
        )
        for feedback, answer, email, question in (await session.execute(ordered)).all()
    ]
    return entries, total
