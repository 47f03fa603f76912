from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docchat.auth.scopes import Scope
from docchat.kit.schemas import RequestModel
from docchat.users.emails import EmailAddress
from docchat.users.passwords import personal_words, weakness


class RegisterRequest(RequestModel):
    email: EmailAddress
    password: str = Field(min_length=8, max_length=256)
    display_name: str = Field("", max_length=100)

    @model_validator(mode="after")
    def _password_is_not_easy_to_guess(self) -> RegisterRequest:
        problem = weakness(
            self.password, related=personal_words(str(self.email), self.display_name)
        )
        if problem:
            raise ValueError(problem)
        return self


class RegistrationReceived(BaseModel):
    """The same whether the account was made or the email was taken: sign-up does not reveal
    who has an account. Log in to continue."""

    email: str
    detail: str


class RefreshRequest(RequestModel):
    refresh_token: str = Field(min_length=1, max_length=4096)


class TokenPair(BaseModel):
    access_token: str
    refresh_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105
    expires_in: int = Field(description="Seconds until the access token expires")
    password_change_required: bool = Field(
        False, description="The password was set by an administrator: change it first"
    )


class PasswordChange(RequestModel):
    current_password: str = Field(min_length=1, max_length=256)
    new_password: str = Field(min_length=8, max_length=256)


class ApiKeyCreate(RequestModel):
    name: str = Field(min_length=1, max_length=100)
    scopes: list[Scope] = Field(
        min_length=1, description="What the key may do: read, chat, upload, admin (admins only)"
    )
    expires_at: datetime | None = Field(None, description="When the key stops working; never")


class ApiKeyRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str
    prefix: str = Field(description="The key's first characters, to recognise it")
    scopes: list[Scope]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiKeyCreated(ApiKeyRead):
    secret: str = Field(description="The whole key; shown this once and never again")
