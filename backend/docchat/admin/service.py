from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.admin.schemas import UsageSummary
from docchat.chats.models import Chat
from docchat.documents.models import Document
from docchat.events.models import Event
from docchat.events.service import QUERY_SUBMITTED, RESPONSE_GENERATED
from docchat.users.models import User


async def _count(session: AsyncSession, statement: object) -> int:
    return int((await session.execute(statement)).scalar_one())  # type: ignore[call-overload]


async def usage_summary(session: AsyncSession) -> UsageSummary:
    latency = Event.payload["latency_ms"].as_float()
    average = (
        await session.execute(select(func.avg(latency)).where(Event.type == RESPONSE_GENERATED))
    ).scalar_one()
    return UsageSummary(
        users=await _count(session, select(func.count(User.id)).where(User.deleted_at.is_(None))),
        documents=await _count(
            session, select(func.count(Document.id)).where(Document.deleted_at.is_(None))
        ),
        chats=await _count(session, select(func.count(Chat.id)).where(Chat.deleted_at.is_(None))),
        queries=await _count(
            session, select(func.count(Event.id)).where(Event.type == QUERY_SUBMITTED)
        ),
        responses=await _count(
            session, select(func.count(Event.id)).where(Event.type == RESPONSE_GENERATED)
        ),
        average_latency_ms=float(average) if average is not None else None,
    )
