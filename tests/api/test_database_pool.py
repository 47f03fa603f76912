"""The connection pool against the real PostgreSQL: which connections are pinged before use,
and what becomes of one the server closed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.db import create_engine


async def _backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def _terminate(admin: AsyncEngine, pid: int) -> None:
    async with admin.connect() as connection:
        await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    for _ in range(50):  # the backend is gone once it leaves pg_stat_activity
        async with admin.connect() as connection:
            found = await connection.execute(
                text("SELECT 1 FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
            )
            if found.first() is None:
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"backend {pid} still runs")


@contextlib.asynccontextmanager
async def pooled(
    database_url: str, *, pool_size: int, ping_after_idle: float
) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=pool_size, ping_after_idle=ping_after_idle)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest_asyncio.fixture
async def admin(database_url: str) -> AsyncIterator[AsyncEngine]:
    async with pooled(database_url, pool_size=1, ping_after_idle=60) as engine:
        yield engine


async def test_a_connection_used_a_moment_ago_is_reused_without_a_ping(database_url: str) -> None:
    async with pooled(database_url, pool_size=1, ping_after_idle=60) as engine:
        async with engine.connect() as connection:
            raw = await connection.get_raw_connection()
            asyncpg_connection: Any = raw.driver_connection
        queries: list[str] = []
        asyncpg_connection.add_query_logger(lambda record: queries.append(record.query))
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        assert queries and ";" not in queries  # the ping is `;`


async def test_an_idle_connection_is_pinged_and_a_dead_one_replaced_unseen(
    database_url: str, admin: AsyncEngine
) -> None:
    async with pooled(database_url, pool_size=1, ping_after_idle=0.2) as engine:
        first = await _backend_pid(engine)
        await _terminate(admin, first)
        await asyncio.sleep(0.3)
        # The ping finds the connection dead: the pool opens another, the caller never knows.
        assert await _backend_pid(engine) != first


async def test_a_recently_used_connection_that_died_fails_once_then_the_pool_recovers(
    database_url: str, admin: AsyncEngine
) -> None:
    async with pooled(database_url, pool_size=2, ping_after_idle=60) as engine:
        first = await _backend_pid(engine)
        await _terminate(admin, first)
        with pytest.raises(DBAPIError) as failed:
            await _backend_pid(engine)
        assert failed.value.connection_invalidated
        assert await _backend_pid(engine) != first
