from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.kit.schemas import RequestModel
from docchat.sources.models import SourceState

MAX_SETTING = 2000


class SourceKind(StrEnum):
    folder = "folder"  # a folder on the server (administrators only, under SOURCES_FOLDER_ROOTS)
    s3 = "s3"  # an S3-compatible bucket prefix
    git = "git"  # a Git repository's branch or tag (http or https)
    website = "website"  # a site's pages below a folder: its sitemap, or links from a page


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
    kind: SourceKind
    settings: dict[str, str] = Field(
        default_factory=dict,
        description="folder: `path`; s3: `bucket`, optional `prefix`, `endpoint_url`, "
        "`region`; git: `url`, optional `ref` (branch or tag, default main), `folder`; "
        "website: `url` (a start page, or a sitemap ending in .xml), optional `max_pages` "
        "(200), `path_prefix`",
    )
    secrets: dict[str, str] | None = Field(
        None,
        description="s3: `access_key_id`, `secret_access_key`; git: `token` (and `username` "
        "when the server wants one); stored encrypted, never returned",
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
    kind: SourceKind
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
