from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, status

from docchat.admin import repository
from docchat.auth.dependencies import AdminUser, ClientAddress
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, make_router
from docchat.users import administration
from docchat.users.models import Role
from docchat.users.schemas import (
    AdminUserCreate,
    AdminUserCreated,
    AdminUserRead,
    AdminUserUpdate,
    PasswordResetDone,
)

router = make_router(prefix="/admin/users", tags=["admin"])


@router.get("", response_model=Page[AdminUserRead], operation_id="admin_list_users")
async def list_users(
    _: AdminUser,
    session: SessionDep,
    page: PageDep,
    q: Annotated[
        str | None, Query(max_length=320, description="Part of the email or display name")
    ] = None,
    role: Role | None = None,
    active: bool | None = None,
) -> Page[AdminUserRead]:
    """Accounts, newest first, with search and filters."""
    items, total = await administration.search(session, page, query=q, role=role, active=active)
    listed = page_of(AdminUserRead, items, total, page)
    active_at = await repository.last_active(session, [user.id for user in listed.items])
    for user in listed.items:
        user.last_active_at = active_at.get(user.id)
    return listed


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=AdminUserCreated,
    operation_id="admin_create_user",
)
async def create_user(
    data: AdminUserCreate, admin: AdminUser, session: SessionDep, address: ClientAddress
) -> AdminUserCreated:
    """Add an account (works with self sign-up off). Without `password`, a temporary one is
    generated and returned once; the user must change it at the first login."""
    user, generated = await administration.create(session, admin, data, address)
    read = AdminUserRead.model_validate(user).model_dump()
    return AdminUserCreated.model_validate({**read, "temporary_password": generated})


@router.get("/{user_id}", response_model=AdminUserRead, operation_id="admin_get_user")
async def get_user(user_id: uuid.UUID, _: AdminUser, session: SessionDep) -> AdminUserRead:
    return AdminUserRead.model_validate(await administration.get(session, user_id))


@router.patch("/{user_id}", response_model=AdminUserRead, operation_id="admin_update_user")
async def update_user(
    user_id: uuid.UUID,
    changes: AdminUserUpdate,
    admin: AdminUser,
    session: SessionDep,
    address: ClientAddress,
) -> AdminUserRead:
    """Change the role, deactivate (every session and API key stops at once) or reactivate,
    rename, or set quotas. The last active administrator cannot be demoted or deactivated."""
    user = await administration.get(session, user_id)
    updated = await administration.update(session, admin, user, changes, address)
    return AdminUserRead.model_validate(updated)


@router.post(
    "/{user_id}/reset-password",
    response_model=PasswordResetDone,
    operation_id="admin_reset_password",
)
async def reset_password(
    user_id: uuid.UUID, admin: AdminUser, session: SessionDep, address: ClientAddress
) -> PasswordResetDone:
    """A temporary password (shown once) that must be changed at the next login; every
    session of the account ends now."""
    user = await administration.get(session, user_id)
    password = await administration.reset_password(session, admin, user, address)
    return PasswordResetDone(temporary_password=password)
