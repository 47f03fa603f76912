from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from fastapi import Query

from docchat.audit import service
from docchat.audit.schemas import AuditEntryRead
from docchat.auth.dependencies import AdminUser
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, make_router

router = make_router(prefix="/admin/audit", tags=["admin"])


@router.get("", response_model=Page[AuditEntryRead], operation_id="admin_audit_log")
async def audit_log(
    _: AdminUser,
    session: SessionDep,
    page: PageDep,
    action: Annotated[service.AuditAction | None, Query(description="Only this action")] = None,
    actor_id: Annotated[uuid.UUID | None, Query(description="Only what this user did")] = None,
    target_id: Annotated[
        str | None, Query(max_length=64, description="Only what was done to this id")
    ] = None,
    since: Annotated[datetime | None, Query(description="From this time on")] = None,
    until: Annotated[datetime | None, Query(description="Before this time")] = None,
) -> Page[AuditEntryRead]:
    """Security-relevant actions, newest first: logins and failures, API keys, user
    administration, deletions. Read-only: no route changes or removes an entry."""
    items, total = await service.search(
        session,
        page,
        action=action,
        actor_id=actor_id,
        target_id=target_id,
        since=since,
        until=until,
    )
    return page_of(AuditEntryRead, items, total, page)
