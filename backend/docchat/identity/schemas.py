from __future__ import annotations

from pydantic import BaseModel, Field


class LoginMethods(BaseModel):
    """How people log in here, for a login page to offer the right fields."""

    directory: bool = Field(
        description="A company directory checks names and passwords: the login name may be a "
        "directory user name as well as an e-mail"
    )
    registration: bool = Field(description="Anyone may create an account")
