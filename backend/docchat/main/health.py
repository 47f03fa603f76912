"""Liveness (`/healthz`) and readiness (`/readyz`) probes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from docchat.config import PROJECT_ROOT

logger = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


def alembic_head() -> str | None:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(Path(PROJECT_ROOT / "migrations")))
    return ScriptDirectory.from_config(config).get_current_head()


@router.get("/healthz", operation_id="health_live")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _check_database(request: Request) -> dict[str, Any]:
    try:
        async with request.app.state.sessionmaker() as session:
            version = (
                await session.execute(text("SELECT version_num FROM alembic_version"))
            ).scalar_one_or_none()
    except Exception as exc:
        logger.warning("readiness: database check failed: %s", exc)
        return {"ok": False, "error": "database unreachable"}
    head = request.app.state.alembic_head
    if version != head:
        return {"ok": False, "error": f"migrations not at head ({version} != {head})"}
    return {"ok": True, "revision": version}


@router.get("/readyz", operation_id="health_ready")
async def readyz(request: Request) -> JSONResponse:
    checks: dict[str, dict[str, Any]] = {"database": await _check_database(request)}
    for name, probe in request.app.state.readiness_probes.items():
        try:
            checks[name] = await probe()
        except Exception as exc:
            checks[name] = {"ok": False, "error": str(exc)[:200]}
    ready = all(check["ok"] for check in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks},
        status_code=200 if ready else 503,
    )
