from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Response, status
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from docchat.account import deletion, export
from docchat.account.schemas import (
    DeletionConfirmation,
    DeletionOutcome,
    DeletionPlan,
    DeletionStatus,
)
from docchat.audit import service as audit
from docchat.auth import service as auth_service
from docchat.auth.dependencies import ClientAddress, CurrentUser, LoginLimiterDep, SignedInUser
from docchat.auth.schemas import PasswordChange, TokenPair
from docchat.documents import repository as documents_repository
from docchat.documents.dependencies import StorageDep, VectorIndexDep
from docchat.kit.routing import SessionDep, SessionmakerDep, SettingsDep, make_router
from docchat.llm.catalog import resolve_model
from docchat.quotas import service as quotas
from docchat.quotas.schemas import QuotaUsage
from docchat.users import service
from docchat.users.schemas import UserRead, UserUpdate

router = make_router(prefix="/users", tags=["users"])


@router.get("/me", response_model=UserRead, operation_id="users_me")
async def read_me(user: SignedInUser) -> UserRead:
    """Your account (also while `must_change_password` is true, so a client can ask for it)."""
    return UserRead.model_validate(user)


@router.post("/me/password", response_model=TokenPair, operation_id="users_change_password")
async def change_password(
    data: PasswordChange,
    user: SignedInUser,
    session: SessionDep,
    settings: SettingsDep,
    address: ClientAddress,
    limiter: LoginLimiterDep,
) -> TokenPair:
    """Choose a new password (required after an administrator set one). Every other session
    of the account ends; the new token pair returned keeps this client signed in. Wrong
    current passwords are throttled like failed logins (429 with `Retry-After`) and recorded
    in the audit log."""
    return await auth_service.change_password(session, user, data, settings.auth, limiter, address)


@router.patch("/me", response_model=UserRead, operation_id="users_update_me")
async def update_me(
    changes: UserUpdate, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> UserRead:
    """Change your display name or preferred model (one of the models `GET /v1/models` lists)."""
    if changes.preferred_model:
        resolve_model(settings.llm, changes.preferred_model.strip())
    return UserRead.model_validate(await service.update(session, user, changes))


@router.get("/me/usage", response_model=QuotaUsage, operation_id="users_my_usage")
async def my_usage(user: CurrentUser, session: SessionDep, settings: SettingsDep) -> QuotaUsage:
    """Your model tokens today and stored bytes, against your quotas (null: no limit), and the
    largest file an upload may be."""
    stored = await documents_repository.stored_bytes(session, user.id)
    return await quotas.usage(
        session,
        user,
        settings.quota,
        stored_bytes=stored,
        max_upload_bytes=settings.max_upload_bytes,
    )


@router.get(
    "/me/export",
    operation_id="users_export",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"application/zip": {}},
            "description": "A zip file (Content-Disposition: attachment)",
        }
    },
)
async def export_me(
    user: CurrentUser,
    session: SessionDep,
    storage: StorageDep,
    address: ClientAddress,
) -> FileResponse:
    """Everything docchat holds of yours, as one zip file: your account and API keys' names,
    the documents you uploaded (original files), every chat with its answers' sources, the
    collections you own, and the audit log's entries about you."""
    path = await export.archive_of(session, user, storage)
    await audit.record(session, audit.AuditAction.user_exported, actor=user, address=address)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    return FileResponse(
        path,
        media_type="application/zip",
        filename=f"docchat-{stamp}.zip",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )


def get_places(
    index: VectorIndexDep, storage: StorageDep, sessionmaker: SessionmakerDep, settings: SettingsDep
) -> deletion.Places:
    return deletion.Places(index, storage, sessionmaker, settings)


PlacesDep = Annotated[deletion.Places, Depends(get_places)]


@router.get("/me/deletion", response_model=DeletionPlan, operation_id="users_deletion_plan")
async def deletion_plan(user: CurrentUser, session: SessionDep) -> DeletionPlan:
    """What deleting your account would remove, what of it others rely on (an administrator
    then decides about those), and whether your request is waiting."""
    return await deletion.plan_of(session, user)


@router.post(
    "/me/deletion",
    response_model=DeletionOutcome,
    operation_id="users_delete_me",
    responses={
        202: {"model": DeletionOutcome, "description": "Others rely on some of it: it waits"}
    },
)
async def delete_me(
    confirmation: DeletionConfirmation,
    user: CurrentUser,
    session: SessionDep,
    places: PlacesDep,
    address: ClientAddress,
    limiter: LoginLimiterDep,
    response: Response,
) -> DeletionOutcome:
    """Delete your account: your documents and their files, chats, collections only you use,
    API keys and sessions go now, and the audit log keeps its entries with your name replaced.
    Type your email to confirm, and your password (unless you sign in through a directory or
    single sign-on; wrong ones are throttled and recorded as for a password change). When
    others read some of your documents or collections, the request waits (202) for an
    administrator, who hands those over or deletes them too; until then your account works as
    before and you can cancel. Download your data first: it cannot be undone."""
    plan = await deletion.request(session, user, confirmation, places, address, limiter)
    if plan is None:
        return DeletionOutcome(
            status=DeletionStatus.deleted, detail="Your account and everything of it is deleted"
        )
    response.status_code = status.HTTP_202_ACCEPTED
    return DeletionOutcome(
        status=DeletionStatus.requested,
        detail=(
            "Others read some of your documents or collections: an administrator will decide "
            "what happens to them, then delete your account"
        ),
        plan=plan,
    )


@router.delete(
    "/me/deletion",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="users_cancel_deletion",
)
async def cancel_deletion(user: CurrentUser, session: SessionDep, address: ClientAddress) -> None:
    """Take back a deletion request that waits for an administrator."""
    await deletion.cancel_request(session, user, address)
