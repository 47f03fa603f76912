from __future__ import annotations

from fastapi import Request, Response, status

from docchat.admin import service
from docchat.admin.schemas import UsageSummary
from docchat.auth.dependencies import AdminUser
from docchat.dependencies import SettingsDep, StorageDep
from docchat.documents import service as documents_service
from docchat.documents.models import Visibility
from docchat.documents.schemas import DocumentRead
from docchat.documents.upload_form import UPLOAD_REQUEST_BODY
from docchat.kit.routing import SessionDep, make_router

router = make_router(prefix="/admin", tags=["admin"])


@router.post(
    "/documents",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DocumentRead,
    operation_id="admin_upload_shared_document",
    openapi_extra={"requestBody": UPLOAD_REQUEST_BODY},
    responses={
        status.HTTP_200_OK: {
            "model": DocumentRead,
            "description": "The same bytes were uploaded before: that document, `duplicate: true`",
        },
    },
)
async def upload_shared_document(
    request: Request,
    response: Response,
    admin: AdminUser,
    session: SessionDep,
    storage: StorageDep,
    settings: SettingsDep,
) -> DocumentRead:
    """Upload a document every user can read (multipart `file`, read after the check)."""
    upload = await documents_service.upload_from_form(
        request,
        session,
        storage,
        admin,
        max_bytes=settings.max_upload_bytes,
        quota=settings.quota,
        visibility=Visibility.shared,
    )
    return await documents_service.upload_reply(session, upload, admin.id, response)


@router.get("/usage", response_model=UsageSummary, operation_id="admin_usage")
async def usage(_: AdminUser, session: SessionDep) -> UsageSummary:
    return await service.usage_summary(session)
