from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docchat.kit.schemas import RequestModel
from docchat.membership.models import CollectionRole
from docchat.users.emails import EmailAddress


class CollectionCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=1000)


class CollectionUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=1000)


class CollectionRead(BaseModel):
    id: uuid.UUID
    name: str
    description: str
    builtin: bool = Field(description="The built-in collection of documents shared with everyone")
    role: CollectionRole = Field(description="Your role in this collection")
    document_count: int
    created_at: datetime


class MemberAdd(RequestModel):
    """A user (by email) or a group (by id), and the role they get."""

    email: EmailAddress | None = None
    group_id: uuid.UUID | None = None
    role: CollectionRole = CollectionRole.viewer

    @model_validator(mode="after")
    def _exactly_one(self) -> MemberAdd:
        if (self.email is None) == (self.group_id is None):
            raise ValueError("give either email or group_id")
        return self


class MemberUpdate(RequestModel):
    role: CollectionRole


class MemberRead(BaseModel):
    id: uuid.UUID
    role: CollectionRole
    user_id: uuid.UUID | None = Field(
        description="For a user member who has accepted (null while the invitation waits)"
    )
    email: str | None = Field(description="For a user member, or the address invited")
    group_id: uuid.UUID | None
    group_name: str | None = Field(description="For a group member")
    pending: bool = Field(
        False,
        description="Invited, not yet accepted: the collection is not in their answers yet",
    )
    created_at: datetime


class InvitationRead(BaseModel):
    """A collection someone added you to: it reaches your answers once you accept it."""

    collection_id: uuid.UUID
    collection_name: str
    description: str
    role: CollectionRole
    invited_by: str | None = Field(description="The email of who added you")
    created_at: datetime


class GroupCreate(RequestModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field("", max_length=1000)


class GroupUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=100)
    description: str | None = Field(None, max_length=1000)


class GroupRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str
    description: str
    source: str = Field(
        "local",
        description="local (administrators choose its members), ldap (the company directory "
        "does, at each member's login) or oidc (the single sign-on provider does, likewise)",
    )
    member_count: int = 0


class GroupMemberRead(BaseModel):
    user_id: uuid.UUID
    email: str
    display_name: str
