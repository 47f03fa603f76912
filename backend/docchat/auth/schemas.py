from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, EmailStr, Field

from docchat.kit.schemas import RequestModel


class RegisterRequest(RequestModel):
    email: EmailStr
    password: str = Field(min_length=8, max_length=256)
    display_name: str = Field("", max_length=100)


class RefreshRequest(RequestModel):
    refresh_token: str = Field(min_length=1, max_length=4096)


class TokenPair(BaseModel):
    access_token: str
    refresh_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105
    expires_in: int = Field(description="Seconds until the access token expires")
