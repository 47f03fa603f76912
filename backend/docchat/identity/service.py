"""One login: through the company directory when it knows the person, else with the
account's own password (local accounts, such as a break-glass administrator)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth import service as auth
from docchat.auth.ratelimit import LoginLimiter
from docchat.auth.schemas import TokenPair
from docchat.config import Settings
from docchat.identity.accounts import account_for
from docchat.identity.directory import Directory, DirectoryUnavailable, Person, Refusal
from docchat.kit.errors import ServiceUnavailable, Unauthorized

LDAP = "ldap"
DIRECTORY_DOWN = (
    "The company directory cannot be reached, so the password could not be checked: try again "
    "in a moment"
)


async def login(
    session: AsyncSession,
    name: str,
    password: str,
    settings: Settings,
    directory: Directory | None,
    limiter: LoginLimiter,
    address: str,
) -> TokenPair:
    if directory is None:
        return await auth.login(session, name, password, settings.auth, limiter, address)
    limiter.check(address, name)
    try:
        outcome: Person | Refusal | None = await directory.authenticate(name, password)
    except DirectoryUnavailable:
        outcome = None
    if isinstance(outcome, Person):
        user = await account_for(session, outcome, LDAP, settings.ldap.create_accounts, address)
        return await auth.accept_login(
            session, user, settings.auth, limiter, address, name, via=LDAP
        )
    if outcome is Refusal.wrong_password:
        await auth.refuse_login(session, limiter, address, name, None, "directory password")
        raise Unauthorized(auth.INVALID_CREDENTIALS)
    # Unknown to the directory, or it is down: a local account may still log in.
    try:
        return await auth.login(session, name, password, settings.auth, limiter, address)
    except Unauthorized:
        if outcome is None:
            raise ServiceUnavailable(DIRECTORY_DOWN) from None
        raise
