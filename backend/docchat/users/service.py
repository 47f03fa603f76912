from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.db import utcnow
from docchat.kit.errors import Conflict
from docchat.users import repository
from docchat.users.emails import checked_email
from docchat.users.models import Role, User
from docchat.users.passwords import hash_password
from docchat.users.schemas import UserUpdate


async def create(
    session: AsyncSession,
    *,
    email: str,
    password: str,
    display_name: str = "",
    role: Role = Role.user,
) -> User:
    """A new account; its address must pass `checked_email` (InvalidEmail else)."""
    email = checked_email(email)
    if await repository.get_by_email(session, email) is not None:
        raise Conflict("A user with this email already exists")
    user = User(
        email=email,
        password_hash=await hash_password(password),
        display_name=display_name,
        role=role,
    )
    return await repository.add(session, user)


async def register(
    session: AsyncSession, *, email: str, password: str, display_name: str = ""
) -> User | None:
    """A new account, or None when the email is taken. The caller answers both the same way,
    so sign-up does not reveal who has an account; both cost the same hashing work."""
    password_hash = await hash_password(password)
    if await repository.get_by_email(session, email) is not None:
        return None
    user = User(email=email.lower(), password_hash=password_hash, display_name=display_name)
    try:
        async with session.begin_nested():  # two sign-ups for one email at once: one wins
            return await repository.add(session, user)
    except IntegrityError:
        return None


async def end_sessions(session: AsyncSession, user: User) -> None:
    """Every access and refresh token issued so far stops working."""
    user.session_generation += 1
    await session.flush()


async def end_credentials(session: AsyncSession, user: User) -> None:
    """Every token and every API key issued so far stops working, for good: a key does not
    come back when the account is reactivated."""
    user.keys_revoked_at = utcnow()
    await end_sessions(session, user)


async def ensure_admin(
    session: AsyncSession, *, email: str, password: str, reset_password: bool
) -> tuple[User, str]:
    """Make `email` an administrator; returns the account and what was done.

    Promoting an existing account sets the operator's password and ends its sessions and its
    API keys: whoever registered that email before (perhaps to wait for this promotion) is
    locked out. An account that is an administrator already keeps its password unless
    `reset_password`, and its keys (they were made by an administrator). A new account's
    address must pass `checked_email`, as sign-up's does."""
    user = await repository.get_by_email(session, email)
    if user is None:
        created = await create(session, email=email, password=password, role=Role.admin)
        return created, "created"
    if user.is_admin and user.is_active and not reset_password:
        return user, "unchanged"
    promoted = not user.is_admin
    user.role = Role.admin
    user.is_active = True
    user.password_hash = await hash_password(password)
    if promoted:
        await end_credentials(session, user)
    else:
        await end_sessions(session, user)
    return user, "promoted" if promoted else "password reset"


async def update(session: AsyncSession, user: User, changes: UserUpdate) -> User:
    """Apply the fields that were sent; null (or empty) clears a field."""
    fields = changes.model_dump(exclude_unset=True)
    if "display_name" in fields:
        user.display_name = (fields["display_name"] or "").strip()
    if "preferred_model" in fields:
        user.preferred_model = (fields["preferred_model"] or "").strip() or None
    await session.flush()
    return user
