from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response, status

from docchat.admin import service
from docchat.admin.schemas import UsageSummary
from docchat.auth.dependencies import AdminUser
from docchat.chats import feedback
from docchat.chats.models import Rating
from docchat.chats.schemas import FeedbackEntry
from docchat.documents import service as documents_service
from docchat.documents.dependencies import StorageDep
from docchat.documents.models import Visibility
from docchat.documents.schemas import DocumentRead
from docchat.documents.upload_form import UPLOAD_REQUEST_BODY
from docchat.kit.pagination import Page, PageDep
from docchat.kit.routing import SessionDep, SettingsDep, make_router

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


@router.get("/feedback", response_model=Page[FeedbackEntry], operation_id="admin_feedback")
async def answer_feedback(
    _: AdminUser,
    session: SessionDep,
    page: PageDep,
    rating: Annotated[Rating | None, Query(description="Only answers rated this way")] = None,
) -> Page[FeedbackEntry]:
    """Rated answers, newest rating first, each with the question it replied to, the answer,
    its sources and the comment: the material for judging answer quality. Ratings in chats
    their owners deleted are left out."""
    items, total = await feedback.review(session, page, rating)
    return Page(items=items, total=total, skip=page.skip, limit=page.limit)


@router.get("/usage", response_model=UsageSummary, operation_id="admin_usage")
async def usage(_: AdminUser, session: SessionDep) -> UsageSummary:
    return await service.usage_summary(session)
