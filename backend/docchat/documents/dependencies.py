from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Request

from docchat.auth.dependencies import CurrentUser
from docchat.documents import service
from docchat.documents.models import Document
from docchat.documents.storage import FileStorage
from docchat.kit.routing import SessionDep
from docchat.retrieval.index import VectorIndex


async def get_readable_document(
    document_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> Document:
    return await service.get_readable(session, user, document_id)


ReadableDocument = Annotated[Document, Depends(get_readable_document)]


def get_storage(request: Request) -> FileStorage:
    storage: FileStorage = request.app.state.storage
    return storage


def get_vector_index(request: Request) -> VectorIndex:
    index: VectorIndex = request.app.state.vector_index
    return index


StorageDep = Annotated[FileStorage, Depends(get_storage)]
VectorIndexDep = Annotated[VectorIndex, Depends(get_vector_index)]
