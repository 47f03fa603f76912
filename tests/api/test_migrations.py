from __future__ import annotations

from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from docchat.models import Base
from tests.support.database import alembic, create_database, drop_database


async def _tables(url: str) -> set[str]:
    engine = create_async_engine(url, poolclass=NullPool)
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    await engine.dispose()
    return names


async def test_upgrade_downgrade_upgrade() -> None:
    url = await create_database("docchat_migrations")
    try:
        await alembic(url, "upgrade", "head")
        assert set(Base.metadata.tables) <= await _tables(url)
        await alembic(url, "downgrade", "base")
        assert await _tables(url) == {"alembic_version"}
        await alembic(url, "upgrade", "head")
        assert set(Base.metadata.tables) <= await _tables(url)
        # The models and the migrations describe the same schema.
        output = await alembic(url, "check")
        assert "No new upgrade operations detected" in output
    finally:
        await drop_database(url)
