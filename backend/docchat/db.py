"""Database plumbing: the declarative base, the engine and the session factory."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import DateTime, Engine, MetaData, event, func, select
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


async def advisory_xact_lock(session: AsyncSession, name: str) -> None:
    """Wait for, then hold until the transaction ends, the lock called `name` (PostgreSQL's
    advisory locks: nothing is written, and other names never wait on it)."""
    await session.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(name, 0))))


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: DateTime(timezone=True)}


class IdMixin:
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(
        default=utcnow, server_default=func.now(), index=True
    )
    updated_at: Mapped[datetime] = mapped_column(
        default=utcnow, server_default=func.now(), onupdate=utcnow
    )


class SoftDeleteMixin:
    deleted_at: Mapped[datetime | None] = mapped_column(default=None)


# A pooled connection idle for longer than this is pinged before it is used. One used more
# recently is trusted: pinging every checkout (SQLAlchemy's pool_pre_ping) costs three round
# trips with asyncpg (BEGIN, the ping, ROLLBACK), measured at 9 ms of CPU per chat message.
PING_AFTER_IDLE_SECONDS = 10.0
_IDLE_SINCE = "docchat_idle_since"


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    ping_after_idle: float = PING_AFTER_IDLE_SECONDS,
    connect_args: dict[str, Any] | None = None,
) -> AsyncEngine:
    """The engine, its pool last-in first-out so that a quiet service keeps reusing the same
    few connections (they stay fresh) and lets the others idle (they are pinged).
    `connect_args` go to asyncpg's `connect` (a timeout, say)."""
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=20,
        pool_use_lifo=True,
        connect_args=connect_args or {},
    )
    _ping_idle_connections(engine.sync_engine, ping_after_idle)
    return engine


def _ping_idle_connections(engine: Engine, after_seconds: float) -> None:
    """Ping a connection before use when it has been idle for `after_seconds` or more.

    A dead one (the database restarted, a firewall dropped it) is then replaced before the
    request sees it. A connection used moments ago that died all the same fails its statement:
    that request gets a 503, and the pool, told of the disconnection, replaces every connection
    it holds."""

    @event.listens_for(engine, "checkin")
    def _mark_idle(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(
        dbapi_connection: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection
    ) -> None:
        since = record.info.pop(_IDLE_SINCE, None)
        if since is None or time.monotonic() - since < after_seconds:
            return  # new, or back in the pool a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            # The pool discards this connection and checks out another (a new one if need be).
            raise DisconnectionError("a pooled connection did not answer its ping") from exc


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@contextlib.asynccontextmanager
async def session_scope(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> AsyncIterator[AsyncSession]:
    """`async with session_scope(...) as session:` commits when the block ends cleanly and
    rolls back otherwise."""
    async with sessionmaker() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise
