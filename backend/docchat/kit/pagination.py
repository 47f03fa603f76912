"""Offset pagination shared by every list endpoint: `skip`, `limit`, and `total` in the reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

MAX_LIMIT = 100


@dataclass(frozen=True)
class PageParams:
    skip: int = 0
    limit: int = 20


def _page_params(
    skip: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
) -> PageParams:
    return PageParams(skip=skip, limit=limit)


PageDep = Annotated[PageParams, Depends(_page_params)]


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    skip: int
    limit: int


async def paginate(
    session: AsyncSession, statement: Select[Any], params: PageParams
) -> tuple[Sequence[Any], int]:
    """Run `statement` for one page and count all its rows; returns (rows, total)."""
    count_statement = select(func.count()).select_from(statement.order_by(None).subquery())
    total = (await session.execute(count_statement)).scalar_one()
    rows = (await session.execute(statement.offset(params.skip).limit(params.limit))).scalars()
    return rows.all(), total


M = TypeVar("M", bound=BaseModel)


def page_of(schema: type[M], rows: Sequence[Any], total: int, params: PageParams) -> Page[M]:
    """One page of `rows`, each read into `schema`, with the counts a client pages by."""
    items = [schema.model_validate(row) for row in rows]
    return Page(items=items, total=total, skip=params.skip, limit=params.limit)
