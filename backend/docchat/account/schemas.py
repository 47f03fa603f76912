from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from docchat.kit.schemas import RequestModel


class DeletionConfirmation(RequestModel):
    confirm_email: str = Field(
        min_length=1, max_length=320, description="The account's email, typed again"
    )
    password: str | None = Field(
        None,
        max_length=256,
        description="The account's password (not needed for one that signs in through a "
        "directory or single sign-on)",
    )


class OthersDocuments(StrEnum):
    """What happens to the documents of a deleted account that others read."""

    transfer = "transfer"  # to another account, which owns them from then on
    delete = "delete"  # with everything else of the account


class ReliedOnDocument(BaseModel):
    id: uuid.UUID
    filename: str
    shared_with_everyone: bool
    collections: list[str] = Field(description="Collections others read it through")


class ReliedOnCollection(BaseModel):
    id: uuid.UUID
    name: str
    members: int = Field(description="Other members (people and groups)")


class DeletionPlan(BaseModel):
    """What deleting the account removes, and what of it others rely on."""

    documents: int = Field(description="Documents of the account")
    chats: int
    api_keys: int
    collections_owned: int = Field(description="Collections it alone owns")
    relied_on_documents: list[ReliedOnDocument] = Field(
        description="Documents others read (shared with everyone, or in a collection with "
        "other members): an administrator decides whether they go to another account or go"
    )
    relied_on_collections: list[ReliedOnCollection] = Field(
        description="Collections it alone owns that others are members of"
    )
    deletion_requested_at: datetime | None = Field(
        description="When the person asked for the deletion, if they did and it waits"
    )


class DeletionStatus(StrEnum):
    deleted = "deleted"
    requested = "requested"  # waits for an administrator (others rely on some of it)


class DeletionOutcome(BaseModel):
    status: DeletionStatus
    detail: str
    plan: DeletionPlan | None = Field(None, description="With `requested`: what waits")
