"""Create and drop throwaway databases, migrated with Alembic as a user would."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[2]
# The server's maintenance database, used only to create and drop the test databases.
ADMIN_URL = os.environ.get(
    "TEST_DATABASE_ADMIN_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)


def url_for(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


async def create_database(prefix: str = "docchat_test") -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    engine = create_async_engine(ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    async with engine.connect() as connection:
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    await engine.dispose()
    return url_for(name)


async def drop_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    engine = create_async_engine(ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    async with engine.connect() as connection:
        await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    await engine.dispose()


async def alembic(url: str, *args: str) -> str:
    """Run the real `alembic` command against `url`; returns its output, raises on failure."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "alembic",
        "-c",
        str(ROOT / "alembic.ini"),
        *args,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    text_output = output.decode()
    if process.returncode != 0:
        raise RuntimeError(f"alembic {' '.join(args)} failed:\n{text_output}")
    return text_output
