from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, EmailStr, Field, model_validator

from docchat.kit.schemas import RequestModel
from docchat.users.passwords import personal_words, weakness


class RegisterRequest(RequestModel):
    email: EmailStr
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
