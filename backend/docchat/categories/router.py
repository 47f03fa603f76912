from __future__ import annotations

from fastapi import status

from docchat.auth.dependencies import CurrentUser
from docchat.categories import service
from docchat.categories.dependencies import OwnedCategory
from docchat.categories.schemas import CategoryRead, CategoryWrite
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, make_router

router = make_router(prefix="/categories", tags=["categories"])


@router.get("", response_model=Page[CategoryRead], operation_id="categories_list")
async def list_categories(
    user: CurrentUser, session: SessionDep, page: PageDep
) -> Page[CategoryRead]:
    items, total = await service.list_owned(session, user, page)
    return page_of(CategoryRead, items, total, page)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CategoryRead,
    operation_id="categories_create",
)
async def create_category(
    data: CategoryWrite, user: CurrentUser, session: SessionDep
) -> CategoryRead:
    return CategoryRead.model_validate(await service.create(session, user, data.name))


@router.get("/{category_id}", response_model=CategoryRead, operation_id="categories_get")
async def get_category(category: OwnedCategory) -> CategoryRead:
    return CategoryRead.model_validate(category)


@router.patch("/{category_id}", response_model=CategoryRead, operation_id="categories_update")
async def rename_category(
    data: CategoryWrite, category: OwnedCategory, user: CurrentUser, session: SessionDep
) -> CategoryRead:
    return CategoryRead.model_validate(await service.rename(session, category, user, data.name))


@router.delete(
    "/{category_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="categories_delete"
)
async def delete_category(category: OwnedCategory, session: SessionDep) -> None:
    await service.delete(session, category)
