"""Liveness (`/healthz`) and readiness (`/readyz`) probes."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from docchat.auth.dependencies import administrator_calling
from docchat.main import doctor

logger = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


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
    body: dict[str, Any] = {"status": "ready" if ready else "unavailable", "checks": checks}
    state = request.app.state
    if await administrator_calling(request, state.sessionmaker, state.settings.auth):
        # What `docchat doctor` finds, each with what to do: for administrators only (it names
        # folders, endpoints and versions).
        body["details"] = doctor.as_json(await doctor.examine(state.doctor))
    return JSONResponse(body, status_code=200 if ready else 503)
