from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.admin import repository
from docchat.admin.schemas import UsageSummary
from docchat.events.service import QUERY_SUBMITTED, RESPONSE_GENERATED


async def usage_summary(session: AsyncSession) -> UsageSummary:
    users, documents, chats = await repository.live_counts(session)
    return UsageSummary(
        users=users,
        documents=documents,
        chats=chats,
        queries=await repository.event_count(session, QUERY_SUBMITTED),
        responses=await repository.event_count(session, RESPONSE_GENERATED),
        average_latency_ms=await repository.average_latency_ms(session, RESPONSE_GENERATED),
    )
