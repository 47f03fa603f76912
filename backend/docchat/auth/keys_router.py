from __future__ import annotations

import uuid

from fastapi import status

from docchat.auth import api_keys
from docchat.auth.dependencies import ClientAddress, CurrentUser
from docchat.auth.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyRead
from docchat.kit.routing import SessionDep, make_router

router = make_router(prefix="/api-keys", tags=["api-keys"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ApiKeyCreated,
    operation_id="api_keys_create",
)
async def create_key(
    data: ApiKeyCreate, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> ApiKeyCreated:
    """A new personal API key. `secret` is in this answer only: store it now. Use it as a
    bearer token on `/api/v1` and as `api_key` of an OpenAI client pointed at `/v1`."""
    key, secret = await api_keys.create(
        session,
        user,
        name=data.name,
        scopes=data.scopes,
        expires_at=data.expires_at,
        address=address,
    )
    return ApiKeyCreated.model_validate(
        {**ApiKeyRead.model_validate(key).model_dump(), "secret": secret}
    )


@router.get("", response_model=list[ApiKeyRead], operation_id="api_keys_list")
async def list_keys(user: CurrentUser, session: SessionDep) -> list[ApiKeyRead]:
    """Your keys, newest first, revoked and expired ones included (never their secrets)."""
    return [ApiKeyRead.model_validate(key) for key in await api_keys.list_for(session, user)]


@router.delete("/{key_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="api_keys_revoke")
async def revoke_key(
    key_id: uuid.UUID, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> None:
    """Revoke a key: the next request made with it is refused (401)."""
    await api_keys.revoke(session, user, key_id, address=address)
