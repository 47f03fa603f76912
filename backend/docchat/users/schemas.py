from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from docchat.kit.schemas import RequestModel
from docchat.users.models import Role


class UserRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    email: str
    display_name: str
    role: Role
    is_active: bool
    preferred_model: str | None
    created_at: datetime


class UserUpdate(RequestModel):
    display_name: str | None = Field(None, max_length=100)
    preferred_model: str | None = Field(None, max_length=200)
