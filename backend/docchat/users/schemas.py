from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from docchat.kit.schemas import RequestModel
from docchat.users.emails import EmailAddress
from docchat.users.models import Role


class UserRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    email: str
    display_name: str
    role: Role
    is_active: bool
    preferred_model: str | None
    must_change_password: bool
    created_at: datetime


class UserUpdate(RequestModel):
    display_name: str | None = Field(None, max_length=100)
    preferred_model: str | None = Field(None, max_length=200)


class AdminUserRead(UserRead):
    daily_token_limit: int | None = Field(
        description="Tokens per day (null: the server's default; 0: no limit)"
    )
    storage_limit_mb: int | None = Field(
        description="Stored megabytes (null: the server's default; 0: no limit)"
    )
    last_active_at: datetime | None = Field(
        None, description="Latest login, question or other recorded action (null: none yet)"
    )
    deletion_requested_at: datetime | None = Field(
        None, description="When the person asked to delete the account (null: they did not)"
    )


class AdminUserCreate(RequestModel):
    email: EmailAddress
    display_name: str = Field("", max_length=100)
    role: Role = Role.user
    password: str | None = Field(
        None,
        min_length=8,
        max_length=256,
        description="Omit to have a temporary password generated (returned once)",
    )
    must_change_password: bool = Field(
        True, description="The user must choose a new password at the first login"
    )


class AdminUserCreated(AdminUserRead):
    temporary_password: str | None = Field(
        description="The generated password (only when none was given); shown this once"
    )


class AdminUserUpdate(RequestModel):
    """Fields that are sent change; the limits take null to return to the server's default."""

    display_name: str | None = Field(None, max_length=100)
    role: Role | None = None
    is_active: bool | None = Field(
        None, description="false ends every session and stops every API key of the user at once"
    )
    daily_token_limit: int | None = Field(None, ge=0, le=10**12)
    storage_limit_mb: int | None = Field(None, ge=0, le=10**9)


class PasswordResetDone(BaseModel):
    temporary_password: str = Field(description="Shown this once; to be changed at next login")
