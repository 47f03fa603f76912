from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends

from docchat.auth.dependencies import CurrentUser
from docchat.documents import service
from docchat.documents.models import Document
from docchat.kit.routing import SessionDep


async def get_readable_document(
    document_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> Document:
    return await service.get_readable(session, user, document_id)


ReadableDocument = Annotated[Document, Depends(get_readable_document)]
