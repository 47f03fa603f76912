"""Ratings of answers: the chat's owner rates an answer up or down (with an optional comment);
administrators review the ratings with the question, the answer and its sources."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.chats import repository
from docchat.chats.models import AnswerFeedback, Chat, Message, Rating
from docchat.chats.schemas import FeedbackEntry, FeedbackWrite
from docchat.kit.errors import NotFound
from docchat.kit.pagination import PageParams
from docchat.users.models import User


async def _answer_in(session: AsyncSession, chat: Chat, message_id: uuid.UUID) -> Message:
    answer = await repository.get_answer(session, chat.id, message_id)
    if answer is None:
        raise NotFound("No such answer in this chat")
    return answer


async def rate(
    session: AsyncSession, user: User, chat: Chat, message_id: uuid.UUID, data: FeedbackWrite
) -> AnswerFeedback:
    """Rate an answer of the user's own chat; rating it again replaces the earlier rating."""
    answer = await _answer_in(session, chat, message_id)
    comment = (data.comment or "").strip() or None
    return await repository.save_feedback(session, answer.id, user.id, data.rating, comment)


async def withdraw(session: AsyncSession, chat: Chat, message_id: uuid.UUID) -> None:
    answer = await _answer_in(session, chat, message_id)
    await repository.delete_feedback(session, answer.id)


async def of_messages(
    session: AsyncSession, message_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, AnswerFeedback]:
    if not message_ids:
        return {}
    return await repository.feedback_of(session, message_ids)


async def review(
    session: AsyncSession, page: PageParams, rating: Rating | None = None
) -> tuple[list[FeedbackEntry], int]:
    """One page of ratings, newest first, for administrators."""
    rows, total = await repository.feedback_page(session, page, rating)
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
        for feedback, answer, email, question in rows
    ]
    return entries, total
