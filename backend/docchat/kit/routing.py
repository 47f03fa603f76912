"""One request, one transaction: the route class opens the session and commits it.

The endpoint (and the services it calls) only `flush()`; this class commits once after the
endpoint returns and before the response is sent, and rolls back when anything raised.
A streaming endpoint's generator runs after this commit and must open its own sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


class TransactionalRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run_in_transaction(request: Request) -> Response:
            sessionmaker: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
            async with sessionmaker() as session:
                request.state.session = session
                try:
                    response = await handler(request)
                except BaseException:
                    await session.rollback()
                    raise
                await session.commit()
                return response

        return run_in_transaction


def get_session(request: Request) -> AsyncSession:
    session: AsyncSession = request.state.session
    return session


SessionDep = Annotated[AsyncSession, Depends(get_session)]


def make_router(**kwargs: object) -> APIRouter:
    return APIRouter(route_class=TransactionalRoute, **kwargs)  # type: ignore[arg-type]
