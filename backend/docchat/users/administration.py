"""What administrators do to accounts: create, (de)activate, change role, reset a password,
set quotas. The API's admin routes and the `docchat users` commands both call these, and every
change is written to the audit log with who made it (a user, or the command line)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import or_
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.kit.errors import Conflict, NotFound, Unprocessable
from docchat.kit.matching import contains
from docchat.kit.pagination import PageParams, paginate
from docchat.users import repository
from docchat.users.models import Role, User
from docchat.users.passwords import hash_password, personal_words, weakness
from docchat.users.schemas import AdminUserCreate, AdminUserUpdate
from docchat.users.service import end_credentials, end_sessions

LAST_ADMIN = "This is the last active administrator; make another one first"


def temporary_password() -> str:
    return secrets.token_urlsafe(12)


async def _audit(
    session: AsyncSession,
    action: audit.AuditAction,
    actor: User | None,
    user: User,
    address: str | None,
    **detail: Any,
) -> None:
    await audit.record(
        session,
        action,
        actor=actor,
        actor_email=None if actor else audit.COMMAND_LINE,
        target=("user", user.id),
        address=address,
        email=user.email,
        **detail,
    )


async def get(session: AsyncSession, user_id: uuid.UUID) -> User:
    user = await repository.get_by_id(session, user_id)
    if user is None:
        raise NotFound("User not found")
    return user


async def get_by_email(session: AsyncSession, email: str) -> User:
    user = await repository.get_by_email(session, email)
    if user is None:
        raise NotFound(f"No user with the email {email}")
    return user


async def search(
    session: AsyncSession,
    page: PageParams,
    *,
    query: str | None = None,
    role: Role | None = None,
    active: bool | None = None,
    deletion_requested: bool | None = None,
) -> tuple[Sequence[User], int]:
    """Newest first; `query` matches part of the email or the display name."""
    statement = repository.active_users()
    if query:
        statement = statement.where(
            or_(contains(User.email, query), contains(User.display_name, query))
        )
    if role is not None:
        statement = statement.where(User.role == role)
    if active is not None:
        statement = statement.where(User.is_active.is_(active))
    if deletion_requested is not None:
        requested = User.deletion_requested_at.is_not(None)
        statement = statement.where(requested if deletion_requested else ~requested)
    return await paginate(session, statement.order_by(User.created_at.desc(), User.id), page)


async def _checked_password(password: str, email: str, display_name: str) -> str:
    problem = weakness(password, related=personal_words(email, display_name))
    if problem:
        raise Unprocessable(problem)
    return await hash_password(password)


async def create(
    session: AsyncSession, actor: User | None, data: AdminUserCreate, address: str | None
) -> tuple[User, str | None]:
    """The new account and its generated password (None when the administrator gave one)."""
    email = str(data.email).lower()
    if await repository.get_by_email(session, email) is not None:
        raise Conflict("A user with this email already exists")
    generated = None if data.password else temporary_password()
    password = data.password or generated or ""
    user = User(
        email=email,
        password_hash=await _checked_password(password, email, data.display_name),
        display_name=data.display_name.strip(),
        role=data.role,
        must_change_password=data.must_change_password or generated is not None,
    )
    await repository.add(session, user)
    await _audit(session, audit.AuditAction.user_created, actor, user, address, role=user.role)
    return user, generated


async def ensure_another_admin(session: AsyncSession, user: User) -> None:
    """Refuse to leave the installation without an active administrator."""
    if not (user.is_admin and user.is_active):
        return
    if await repository.count_other_active_admins(session, user.id) == 0:
        raise Conflict(LAST_ADMIN)


async def set_active(
    session: AsyncSession, actor: User | None, user: User, active: bool, address: str | None
) -> None:
    if user.is_active == active:
        return
    if not active:
        await ensure_another_admin(session, user)
        # Keys too, for good: reactivating an account that was taken over must not bring
        # back the keys made with it; its owner makes new ones.
        await end_credentials(session, user)
    user.is_active = active
    action = audit.AuditAction.user_reactivated if active else audit.AuditAction.user_deactivated
    await _audit(session, action, actor, user, address)


async def set_role(
    session: AsyncSession, actor: User | None, user: User, role: Role, address: str | None
) -> None:
    if user.role == role:
        return
    if role != Role.admin:
        await ensure_another_admin(session, user)
    before = user.role
    user.role = role
    action = audit.AuditAction.user_role_changed
    await _audit(session, action, actor, user, address, before=before, after=role)


async def reset_password(
    session: AsyncSession, actor: User | None, user: User, address: str | None
) -> str:
    """A temporary password to hand over; every session of the account ends at once."""
    password = temporary_password()
    user.password_hash = await hash_password(password)
    user.must_change_password = True
    await end_sessions(session, user)
    await _audit(session, audit.AuditAction.user_password_reset, actor, user, address)
    return password


async def update(
    session: AsyncSession,
    actor: User | None,
    user: User,
    changes: AdminUserUpdate,
    address: str | None,
) -> User:
    fields = changes.model_dump(exclude_unset=True)
    if fields.get("display_name") is not None:
        user.display_name = fields["display_name"].strip()
    if fields.get("role") is not None:
        await set_role(session, actor, user, fields["role"], address)
    if fields.get("is_active") is not None:
        await set_active(session, actor, user, fields["is_active"], address)
    quotas = {
        name: fields[name] for name in ("daily_token_limit", "storage_limit_mb") if name in fields
    }
    if quotas:
        for name, value in quotas.items():
            setattr(user, name, value)
        await _audit(session, audit.AuditAction.user_quota_changed, actor, user, address, **quotas)
    await session.flush()
    return user
