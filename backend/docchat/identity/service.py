"""One login: through the company directory when it knows the person, else with the
account's own password (local accounts, such as a break-glass administrator)."""

from __future__ import annotations

from enum import Enum

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth import service as auth
from docchat.auth.ratelimit import LoginLimiter
from docchat.auth.schemas import TokenPair
from docchat.config import AuthSettings, LdapSettings
from docchat.identity.accounts import Rules, account_for
from docchat.identity.directory import (
    Directory,
    DirectoryUnavailable,
    Person,
    Refusal,
)
from docchat.kit.errors import Forbidden, ServiceUnavailable, Unauthorized

LDAP = "ldap"


class Asked(Enum):
    """What the directory said before a docchat password is tried."""

    no_directory = "no directory"
    unknown = "unknown"  # no such name there
    down = "down"  # it could not be asked


PASSWORD_LOGIN_OFF = (
    "Logging in with a docchat password is turned off on this server: use single sign-on"  # noqa: S105
)
DIRECTORY_DOWN = (
    "The company directory cannot be reached, so the password could not be checked: try again "
    "in a moment"
)


async def login(
    session: AsyncSession,
    name: str,
    password: str,
    settings: AuthSettings,
    ldap: LdapSettings,
    directory: Directory | None,
    limiter: LoginLimiter,
    address: str,
) -> TokenPair:
    if directory is None or settings.is_break_glass(name):
        return await _local(session, name, password, settings, limiter, address)
    limiter.check(address, name)
    try:
        outcome: Person | Refusal | None = await directory.authenticate(name, password)
    except DirectoryUnavailable:
        outcome = None
    if isinstance(outcome, Person):
        rules = Rules(LDAP, ldap.create_accounts, settings.break_glass_email)
        user = await account_for(session, outcome, rules, address)
        return await auth.accept_login(session, user, settings, limiter, address, name, via=LDAP)
    if outcome is Refusal.wrong_password:
        await auth.refuse_login(session, limiter, address, name, None, "directory password")
        raise Unauthorized(auth.INVALID_CREDENTIALS)
    # Unknown to the directory, or it is down: a local account may still log in.
    asked = Asked.down if outcome is None else Asked.unknown
    return await _local(session, name, password, settings, limiter, address, asked)


async def _local(
    session: AsyncSession,
    name: str,
    password: str,
    settings: AuthSettings,
    limiter: LoginLimiter,
    address: str,
    directory: Asked = Asked.no_directory,
) -> TokenPair:
    """A login with the account's docchat password, after what the directory (if any) said."""
    if not settings.password_login_for(name):
        if directory is Asked.down:
            raise ServiceUnavailable(DIRECTORY_DOWN)
        if directory is Asked.unknown:  # the directory's people log in: this name is not one
            await auth.refuse_login(session, limiter, address, name, None, "unknown name")
            raise Unauthorized(auth.INVALID_CREDENTIALS)
        raise Forbidden(PASSWORD_LOGIN_OFF)
    try:
        return await auth.login(session, name, password, settings, limiter, address)
    except Unauthorized:
        if directory is Asked.down:
            raise ServiceUnavailable(DIRECTORY_DOWN) from None
        raise
