from __future__ import annotations

from pydantic import BaseModel


class UsageSummary(BaseModel):
    users: int
    documents: int
    chats: int
    queries: int
    responses: int
    average_latency_ms: float | None
