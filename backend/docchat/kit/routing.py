"""One request, one transaction: the route class opens the session and commits it.

The endpoint (and the services it calls) only `flush()`; this class commits once after the
endpoint returns and before the response is sent, and rolls back when anything raised.
A streaming endpoint's generator runs after this commit and must open its own sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings

logger = logging.getLogger(__name__)
_AFTER_COMMIT = "docchat.after_commit"
AfterCommit = Callable[[], Awaitable[None]]


def after_commit(session: AsyncSession, callback: AfterCommit) -> None:
    """Run `callback` once the request's transaction has committed (never if it rolls back):
    for work outside the database that must follow the data, such as removing a file."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


async def run_after_commit(session: AsyncSession) -> None:
    """The work `after_commit` left (the request's route runs it; a command line calls it)."""
    for callback in session.info.pop(_AFTER_COMMIT, []):
        try:
            await callback()
        except Exception:  # the request succeeded; a failed follow-up is logged, not raised
            logger.exception("after-commit work failed")


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
                    session.info.pop(_AFTER_COMMIT, None)
                    await session.rollback()
                    raise
                await session.commit()
                await run_after_commit(session)
                return response

        return run_in_transaction


def get_session(request: Request) -> AsyncSession:
    session: AsyncSession = request.state.session
    return session


SessionDep = Annotated[AsyncSession, Depends(get_session)]


def get_sessionmaker(request: Request) -> async_sessionmaker[AsyncSession]:
    """For work that must run in sessions of its own (after the request's commits)."""
    sessionmaker: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
    return sessionmaker


SessionmakerDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessionmaker)]


def get_app_settings(request: Request) -> Settings:
    """The settings the application was built with (the one source of settings at run time)."""
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def make_router(**kwargs: object) -> APIRouter:
    return APIRouter(route_class=TransactionalRoute, **kwargs)  # type: ignore[arg-type]
