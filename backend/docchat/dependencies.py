"""App-wide dependencies: settings and the components built once in the lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from docchat.config import Settings


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
