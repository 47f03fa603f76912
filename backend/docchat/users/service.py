from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.auth.security import hash_password
from docchat.kit.errors import Conflict
from docchat.kit.pagination import PageParams, paginate
from docchat.users import repository
from docchat.users.models import Role, User
from docchat.users.schemas import UserUpdate


async def create(
    session: AsyncSession,
    *,
    email: str,
    password: str,
    display_name: str = "",
    role: Role = Role.user,
) -> User:
    if await repository.get_by_email(session, email) is not None:
        raise Conflict("A user with this email already exists")
    user = User(
        email=email.lower(),
        password_hash=hash_password(password),
        display_name=display_name,
        role=role,
    )
    return await repository.add(session, user)


async def ensure_admin(session: AsyncSession, *, email: str, password: str) -> User:
    """Make `email` an admin, creating the account if needed (idempotent)."""
    user = await repository.get_by_email(session, email)
    if user is None:
        return await create(session, email=email, password=password, role=Role.admin)
    user.role = Role.admin
    user.is_active = True
    await session.flush()
    return user


async def update(session: AsyncSession, user: User, changes: UserUpdate) -> User:
    """Apply the fields that were sent; null (or empty) clears a field."""
    fields = changes.model_dump(exclude_unset=True)
    if "display_name" in fields:
        user.display_name = (fields["display_name"] or "").strip()
    if "preferred_model" in fields:
        user.preferred_model = (fields["preferred_model"] or "").strip() or None
    await session.flush()
    return user


async def list_users(session: AsyncSession, page: PageParams) -> tuple[Sequence[User], int]:
    statement = repository.active_users().order_by(User.created_at.desc(), User.id)
    return await paginate(session, statement, page)
