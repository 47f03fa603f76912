from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.kit.schemas import RequestModel
from docchat.sources.models import SourceState
from docchat.sources.port import SettingType

MAX_SETTING = 2000


# A registered kind ("folder", "s3", ...): `GET /api/v1/sources/kinds` lists them.
KIND = Field(min_length=1, max_length=16, description="A kind of `GET /api/v1/sources/kinds`")


def _short_values(values: dict[str, str] | None) -> dict[str, str] | None:
    if values is None:
        return None
    if len(values) > 20:
        raise ValueError("at most 20 settings")
    for name, value in values.items():
        if len(name) > 64 or len(value) > MAX_SETTING:
            raise ValueError(f"{name[:64]} is too long (names 64, values {MAX_SETTING} characters)")
    return values


class SourceCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    kind: str = KIND
    settings: dict[str, str] = Field(
        default_factory=dict,
        description="The settings its kind declares that are no secret "
        "(`GET /api/v1/sources/kinds`)",
    )
    secrets: dict[str, str] | None = Field(
        None,
        description="The settings its kind declares secret (credentials); stored encrypted, "
        "never returned",
    )
    interval_minutes: int | None = Field(
        None,
        ge=1,
        le=60 * 24 * 31,
        description="Minutes between syncs (omitted: SOURCES_DEFAULT_INTERVAL_MINUTES; null: "
        "only when asked)",
    )

    _settings_short = field_validator("settings", "secrets")(_short_values)


class SourceUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=200)
    settings: dict[str, str] | None = None
    secrets: dict[str, str] | None = Field(None, description="Replaces the stored ones")
    interval_minutes: int | None = Field(None, ge=1, le=60 * 24 * 31)
    paused: bool | None = Field(None, description="Pause (a running sync stops) or resume")

    _settings_short = field_validator("settings", "secrets")(_short_values)


class SourceRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    collection_id: uuid.UUID
    owner_id: uuid.UUID = Field(description="Whose documents its files become (and quota)")
    kind: str
    name: str
    settings: dict[str, str]
    has_secrets: bool = Field(description="Credentials are stored (they are never returned)")
    interval_minutes: int | None
    state: SourceState
    next_sync_at: datetime | None
    last_started_at: datetime | None
    last_finished_at: datetime | None
    last_error: str | None
    progress: dict[str, Any] = Field(
        description="The running or last sync: listed, added, changed, removed, unchanged, "
        "failed, done of to_do"
    )
    created_at: datetime


class SourceItemRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    key: str = Field(description="Where the file is in the source (a path, an object key)")
    document_id: uuid.UUID | None
    error: str | None = Field(description="Why the last sync could not bring it in")
    synced_at: datetime | None


class SettingRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    label: str = Field(description="What a form calls it")
    help: str = Field(description="A hint beside the label (may be empty)")
    placeholder: str = Field(description="An example value (may be empty)")
    type: SettingType
    required: bool
    secret: bool = Field(description="A credential: given in `secrets`, never returned")
    address: bool = Field(
        description="An address the server connects to: refused on a private network"
    )


class SourceKindRead(BaseModel):
    kind: str
    label: str
    administrators_only: bool
    settings: list[SettingRead]
