from __future__ import annotations

from pydantic import BaseModel, Field


class SingleSignOn(BaseModel):
    name: str = Field(description="The provider's name, for 'Sign in with <name>'")
    url: str = Field(description="Where the browser goes to start (add ?next=/a/page)")


class LoginMethods(BaseModel):
    """How people log in here, for a login page to offer the right fields."""

    password: bool = Field(
        description="A docchat password logs in (false: only the break-glass account's does)"
    )
    directory: bool = Field(
        description="A company directory checks names and passwords: the login name may be a "
        "directory user name as well as an e-mail"
    )
    registration: bool = Field(description="Anyone may create an account")
    single_sign_on: SingleSignOn | None = Field(
        description="An OpenID Connect provider people sign in with, if one is set up"
    )
