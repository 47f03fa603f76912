from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class QuotaUsage(BaseModel):
    tokens_today: int = Field(description="Model tokens used since 00:00 UTC")
    daily_token_limit: int | None = Field(description="null: no limit")
    tokens_reset_at: datetime
    stored_bytes: int = Field(description="Size of the files of your live documents")
    storage_limit_bytes: int | None = Field(description="null: no limit")
    max_upload_bytes: int = Field(description="Largest file one upload may be")
