"""The docchat account of a person an identity source vouched for (the company directory, a
single sign-on provider): found by its link, else matched by a verified e-mail or made at the
first login; and their groups there mirrored into docchat's groups."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.auth.service import DEACTIVATED
from docchat.db import utcnow
from docchat.identity import repository
from docchat.identity.models import ExternalIdentity
from docchat.kit.errors import Forbidden
from docchat.membership.models import Group
from docchat.sharing import repository as sharing
from docchat.users import repository as users
from docchat.users import service as users_service
from docchat.users.models import User
from docchat.users.passwords import NO_PASSWORD

logger = logging.getLogger(__name__)

UNVERIFIED = (
    "Your sign-in provider has not verified your e-mail address, so it cannot be used to find "
    "or make your docchat account: verify it there, or ask an administrator"
)
NO_EMAIL = (
    "Your account at the identity provider has no e-mail address: ask your administrator to add one"
)
RESERVED = "{email} is this server's break-glass account, which logs in with its own password only"
NO_ACCOUNT = "There is no docchat account for {email}: ask an administrator to create one"
LINKED_ELSEWHERE = (
    "The docchat account for {email} belongs to another directory entry: ask an administrator"
)


class Vouched(Protocol):
    """Who an identity source says signed in."""

    @property
    def subject(self) -> str: ...  # its stable id there
    @property
    def email(self) -> str | None: ...
    @property
    def email_verified(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def groups(self) -> frozenset[str]: ...


@dataclass(frozen=True)
class Rules:
    """How a source's people find their accounts."""

    provider: str  # "ldap", "oidc"
    create_accounts: bool
    # The break-glass account: never linked, it stays a local password's.
    reserved_email: str | None = None


async def account_for(session: AsyncSession, person: Vouched, rules: Rules, address: str) -> User:
    """The active account `person` logs in as, its name, e-mail and groups brought up to date.
    An e-mail the source has not verified neither finds nor makes an account (it would let
    anyone who can type an address at the provider take over that address's account)."""
    provider = rules.provider
    link = await repository.link_of(session, provider, person.subject)
    user = await users.get_by_id(session, link.user_id) if link else None
    if link is not None and user is not None:
        link.last_login_at = utcnow()
        await _follow_email(session, user, person)
    else:
        if link is not None:  # its account was deleted: the person starts again
            await repository.delete_link(session, link)
            await session.flush()
        user = await _matched_or_new(session, person, rules, address)
    if not user.is_active:
        raise Forbidden(DEACTIVATED)
    if person.name and person.name != user.display_name:
        user.display_name = person.name
    await mirror_groups(session, user, person.groups, provider, address)
    return user


async def _matched_or_new(
    session: AsyncSession, person: Vouched, rules: Rules, address: str
) -> User:
    provider = rules.provider
    if not person.email:
        raise Forbidden(NO_EMAIL)
    if not person.email_verified:
        raise Forbidden(UNVERIFIED)
    if rules.reserved_email and person.email == rules.reserved_email.strip().lower():
        raise Forbidden(RESERVED.format(email=person.email))
    user = await users.get_by_email(session, person.email)
    if user is not None:
        if await repository.is_linked(session, user.id, provider):
            raise Forbidden(LINKED_ELSEWHERE.format(email=person.email))
        await _hand_over(session, user)
    elif not rules.create_accounts:
        raise Forbidden(NO_ACCOUNT.format(email=person.email))
    else:
        user = await _new_account(session, person, provider, address)
    try:
        async with session.begin_nested():  # two first logins at once: one link wins
            repository.add_link(
                session,
                ExternalIdentity(user_id=user.id, provider=provider, subject=person.subject),
            )
    except IntegrityError:
        link = await repository.link_of(session, provider, person.subject)
        existing = await users.get_by_id(session, link.user_id) if link else None
        if existing is None:
            raise
        return existing
    await audit.record(
        session,
        audit.AuditAction.user_linked,
        actor=user,
        target=("user", user.id),
        address=address,
        provider=provider,
    )
    return user


async def _hand_over(session: AsyncSession, user: User) -> None:
    """An account made before its owner proved who they are (anyone may sign up with any
    address, an administrator may have set a temporary password): from now on only the source
    logs in as it. Its password, sessions and API keys end, whoever made them."""
    user.password_hash = NO_PASSWORD
    user.must_change_password = False
    await users_service.end_credentials(session, user)


async def _new_account(session: AsyncSession, person: Vouched, provider: str, address: str) -> User:
    user = User(email=person.email, password_hash=NO_PASSWORD, display_name=person.name)
    try:
        async with session.begin_nested():
            await users.add(session, user)
    except IntegrityError:
        existing = await users.get_by_email(session, person.email or "")
        if existing is None:
            raise
        return existing
    await audit.record(
        session,
        audit.AuditAction.user_created,
        actor=user,
        target=("user", user.id),
        address=address,
        via=provider,
    )
    return user


async def _follow_email(session: AsyncSession, user: User, person: Vouched) -> None:
    """The source's new (verified) address replaces the account's, unless another account
    has it."""
    if not person.email or not person.email_verified or person.email == user.email:
        return
    if await users.get_by_email(session, person.email) is not None:
        logger.warning("new e-mail of user %s is another account's; kept the old one", user.id)
        return
    user.email = person.email


async def mirror_groups(
    session: AsyncSession, user: User, names: Iterable[str], source: str, address: str
) -> None:
    """The user's membership in `source`'s groups becomes exactly `names`: groups are made on
    first sight, and a membership removed in the directory is removed here. A local group with
    one of these names is left alone (its members are the administrators' choice)."""
    wanted = await _source_groups(session, {name.lower(): name for name in names}, source)
    current = await repository.source_groups_of(session, user.id, source)
    for group in wanted.values():
        if group.id not in current:
            await sharing.put_in_group(session, group.id, user.id)
            await _record(session, audit.AuditAction.group_member_added, user, group, address)
    gone = current - {group.id for group in wanted.values()}
    if gone:
        await repository.leave_groups(session, user.id, gone)
        for group_id in gone:
            removed = await repository.get_group(session, group_id)
            if removed is not None:
                await _record(
                    session, audit.AuditAction.group_member_removed, user, removed, address
                )


async def _source_groups(
    session: AsyncSession, names: dict[str, str], source: str
) -> dict[str, Group]:
    if not names:
        return {}
    found = {group.name.lower(): group for group in await repository.groups_named(session, names)}
    for key, name in names.items():
        if key in found:
            continue
        group = Group(name=name, description=f"Kept in step with {source}", source=source)
        try:
            async with session.begin_nested():
                repository.add_group(session, group)
        except IntegrityError:  # made by another login just now
            group = await repository.group_named(session, key)
        found[key] = group
    clashing = [group.name for group in found.values() if group.source != source]
    if clashing:
        logger.warning("%s groups named like local groups were not mirrored: %s", source, clashing)
    return {key: group for key, group in found.items() if group.source == source}


async def _record(
    session: AsyncSession, action: audit.AuditAction, user: User, group: Group, address: str
) -> None:
    await audit.record(
        session,
        action,
        actor=None,
        actor_email=group.source,
        target=("group", group.id),
        address=address,
        group=group.name,
        email=user.email,
    )
