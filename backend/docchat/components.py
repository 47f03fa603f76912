"""The parts built once in the app's lifespan and handed to routes by dependencies."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.config import Settings
from docchat.documents.storage import FileStorage
from docchat.events.publisher import EventPublisher
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.retrieval.vectorstore import ChromaVectorStore, VectorStore


@dataclass
class Components:
    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    embedder: Embedder
    vector_store: VectorStore
    llm: LLM
    storage: FileStorage
    publisher: EventPublisher


def build_vector_store(settings: Settings, embedder: Embedder) -> ChromaVectorStore:
    return ChromaVectorStore(
        collection=settings.rag.collection,
        embedding_model=embedder.name,
        dimension=embedder.dimension,
        path=settings.chroma_dir,
        url=settings.chroma_url,
    )


async def build_components(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]
) -> Components:
    from docchat.llm.embeddings import build_embedder

    embedder = await asyncio.to_thread(build_embedder, settings.embedding)
    vector_store = await asyncio.to_thread(build_vector_store, settings, embedder)
    return Components(
        settings=settings,
        sessionmaker=sessionmaker,
        embedder=embedder,
        vector_store=vector_store,
        llm=LLM(settings.llm),
        storage=FileStorage(settings.files_dir),
        publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
    )


def get_components(request: Request) -> Components:
    components: Components = request.app.state.components
    return components


ComponentsDep = Annotated[Components, Depends(get_components)]
