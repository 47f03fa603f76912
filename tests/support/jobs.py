"""Ingestion jobs a test committed and left unfinished, found and removed after it."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from docchat.db import create_sessionmaker
from docchat.documents.models import IngestionJob, JobStatus

UNFINISHED = (JobStatus.queued, JobStatus.running)


async def unfinished_jobs(engine: AsyncEngine) -> set[uuid.UUID]:
    async with create_sessionmaker(engine)() as session:
        found = await session.scalars(
            select(IngestionJob.id).where(IngestionJob.status.in_(UNFINISHED))
        )
        return set(found)


async def remove_jobs(engine: AsyncEngine, ids: set[uuid.UUID]) -> None:
    if not ids:
        return
    async with create_sessionmaker(engine)() as session:
        await session.execute(delete(IngestionJob).where(IngestionJob.id.in_(ids)))
        await session.commit()
