from __future__ import annotations

from docchat.auth.dependencies import CurrentUser
from docchat.dependencies import SettingsDep
from docchat.kit.routing import SessionDep, make_router
from docchat.llm.catalog import resolve_model
from docchat.users import service
from docchat.users.schemas import UserRead, UserUpdate

router = make_router(prefix="/users", tags=["users"])


@router.get("/me", response_model=UserRead, operation_id="users_me")
async def read_me(user: CurrentUser) -> UserRead:
    return UserRead.model_validate(user)


@router.patch("/me", response_model=UserRead, operation_id="users_update_me")
async def update_me(
    changes: UserUpdate, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> UserRead:
    """Change your display name or preferred model (one of the models `GET /v1/models` lists)."""
    if changes.preferred_model:
        resolve_model(settings.llm, changes.preferred_model.strip())
    return UserRead.model_validate(await service.update(session, user, changes))
