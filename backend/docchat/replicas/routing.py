"""Where a question's reads run: on a read replica when one is up and has replayed every write
committed before the question began, on the primary otherwise.

A question begins (`ReadRouter.begin`) in the transaction that records it on the primary, which
notes the primary's log position then. Its reads (BM25, passages, the scope's languages, the
documents' names and dates) are methods marked `@replica_read`; the first of them asks the
chosen replica how far it has replayed. A replica at or past the noted position serves them all:
a share revoked or a document deleted before the question is then gone on the replica too. One
behind serves none of them (the primary does), and one that fails (refused, gone away
mid-statement, too slow) is left for `REPLICA_RETRY_SECONDS` while the read is run again on the
primary: the user sees an answer, not the error. Reads are idempotent, so running one again is
safe. Writes, the queue and everything outside a question never leave the primary.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from docchat.db import create_engine, create_sessionmaker
from docchat.metrics import QUESTION_READS
from docchat.replicas import repository

logger = logging.getLogger(__name__)

# A replica that failed is tried again after this long.
REPLICA_RETRY_SECONDS = 30.0
# A replica that does not accept a connection, or answer a statement, in this long has failed
# (the primary then answers: a dead host must not hold a question for asyncpg's minute).
CONNECT_SECONDS = 3.0
STATEMENT_SECONDS = 15.0

# What a replica failing looks like: a database error (refused, gone away, the statement
# cancelled by recovery), a network error, a timeout. Anything else is the read's own.
REPLICA_FAILURES = (SQLAlchemyError, OSError, TimeoutError)

Sessions = Callable[[], AsyncSession]
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Replica:
    name: str  # host, port and database: never the password
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    down_until: float = 0.0
    # The furthest log position this replica was seen to have replayed (it only grows).
    replayed: int = 0

    @classmethod
    def open(cls, url: str, pool_size: int = 5) -> Replica:
        engine = create_engine(
            url,
            pool_size=pool_size,
            connect_args={"timeout": CONNECT_SECONDS, "command_timeout": STATEMENT_SECONDS},
        )
        parsed = make_url(url)
        name = f"{parsed.host}:{parsed.port or 5432}/{parsed.database}"
        return cls(name, engine, create_sessionmaker(engine))

    def up(self, now: float) -> bool:
        return now >= self.down_until


@dataclass
class Route:
    """One question's reads: the replica chosen at its start (None: the primary), and the
    primary's log position then."""

    replica: Replica | None
    position: int
    settled: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_ROUTE: ContextVar[Route | None] = ContextVar("docchat_question_route", default=None)


@dataclass
class ReadRouter:
    """Sessions for a question's reads (calling it gives one), and the questions' routes."""

    primary: async_sessionmaker[AsyncSession]
    replicas: Sequence[Replica] = ()
    _turn: int = 0

    def __call__(self) -> AsyncSession:
        route = _ROUTE.get()
        if route is not None and route.settled and route.replica is not None:
            return route.replica.sessionmaker()
        return self.primary()

    async def begin(self, session: AsyncSession) -> None:
        """A question begins in `session`, on the primary: its reads from here on (in this task
        and the tasks it starts) go to the next replica that is up, if any."""
        if not self.replicas:
            return
        replica = self._next_up()
        if replica is None:
            QUESTION_READS.labels("primary", "down").inc()
            _ROUTE.set(None)
            return
        _ROUTE.set(Route(replica, await repository.written_position(session)))

    def _next_up(self) -> Replica | None:
        now = time.monotonic()
        for _ in range(len(self.replicas)):
            replica = self.replicas[self._turn % len(self.replicas)]
            self._turn += 1
            if replica.up(now):
                return replica
        return None

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.engine.dispose()


async def _settle(route: Route) -> None:
    """Whether the route's replica has replayed the question's start: if not, the primary."""
    async with route.lock:
        if route.settled:
            return
        route.settled = True
        replica = route.replica
        assert replica is not None
        if replica.replayed < route.position:
            try:
                async with replica.sessionmaker() as session:
                    replayed = await repository.replayed_position(session)
            except REPLICA_FAILURES as exc:
                _leave(route, exc)
                return
            if replayed is None:
                _leave(route, RuntimeError("it is not a streaming standby of the primary"))
                return
            replica.replayed = max(replica.replayed, replayed)
        if replica.replayed < route.position:
            route.replica = None
            QUESTION_READS.labels("primary", "behind").inc()
        else:
            QUESTION_READS.labels("replica", "").inc()


def _leave(route: Route, failure: BaseException) -> None:
    """The route's replica failed: this question and those of the next while go to the primary."""
    replica = route.replica
    if replica is None:
        return
    route.replica = None
    replica.down_until = time.monotonic() + REPLICA_RETRY_SECONDS
    replica.replayed = 0
    QUESTION_READS.labels("primary", "failed").inc()
    logger.warning(
        "the read replica %s failed (%s: %s); questions read from the primary for %.0f s",
        replica.name,
        type(failure).__name__,
        failure,
        REPLICA_RETRY_SECONDS,
    )


async def routed(read: Callable[[], Awaitable[T]]) -> T:
    """`read()` on the question's replica, or on the primary; again on the primary if the
    replica fails during it."""
    route = _ROUTE.get()
    if route is None or route.replica is None:
        return await read()
    if not route.settled:
        await _settle(route)
    if route.replica is None:
        return await read()
    try:
        return await read()
    except REPLICA_FAILURES as exc:
        _leave(route, exc)  # (another read of the question may have left it already)
        return await read()


def replica_read(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Marks a method that only reads (with sessions from a `ReadRouter`) as one a question may
    run on a replica."""

    @functools.wraps(method)
    async def reading(*args: P.args, **kwargs: P.kwargs) -> T:
        return await routed(lambda: method(*args, **kwargs))

    return reading
