from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, status

from docchat.account import deletion
from docchat.account.router import PlacesDep
from docchat.account.schemas import DeletionPlan, OthersDocuments
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
    deletion_requested: Annotated[
        bool | None, Query(description="Only accounts whose deletion waits (or does not)")
    ] = None,
) -> Page[AdminUserRead]:
    """Accounts, newest first, with search and filters."""
    items, total = await administration.search(
        session,
        page,
        query=q,
        role=role,
        active=active,
        deletion_requested=deletion_requested,
    )
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


@router.get(
    "/{user_id}/deletion", response_model=DeletionPlan, operation_id="admin_user_deletion_plan"
)
async def deletion_plan(user_id: uuid.UUID, _: AdminUser, session: SessionDep) -> DeletionPlan:
    """What deleting the account would remove, and the documents and collections others rely
    on, which the deletion must hand over or delete too."""
    return await deletion.plan_for_admin(session, user_id)


@router.delete(
    "/{user_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="admin_delete_user"
)
async def delete_user(
    user_id: uuid.UUID,
    admin: AdminUser,
    session: SessionDep,
    places: PlacesDep,
    address: ClientAddress,
    others_documents: Annotated[
        OthersDocuments | None,
        Query(
            description="What happens to documents and collections others rely on (needed "
            "when there are any): `transfer` them to `transfer_to`, or `delete` them too"
        ),
    ] = None,
    transfer_to: Annotated[
        uuid.UUID | None, Query(description="The account that takes them over")
    ] = None,
) -> None:
    """Delete an account for good (a person's request, or someone who left): its documents
    and files, chunks and vectors, chats, keys, sessions and memberships go; the audit log keeps
    its entries with the person's name replaced. 409 says what others rely on when no choice
    was made; the last active administrator cannot be deleted."""
    decision = deletion.Decision(others_documents, transfer_to)
    await deletion.delete_by_admin(session, admin, user_id, decision, places, address)
