from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends

from docchat.auth.dependencies import CurrentUser
from docchat.categories import service
from docchat.categories.models import Category
from docchat.kit.routing import SessionDep


async def get_owned_category(
    category_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> Category:
    return await service.get_owned(session, user, category_id)


OwnedCategory = Annotated[Category, Depends(get_owned_category)]
