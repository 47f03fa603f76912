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
from docchat.extraction.sandbox import ExtractionSandbox, Limits
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.retrieval.inline import InlineReader
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.search import HybridSearch
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
    # Files are read in sandboxed child processes: one for the worker, one for inline answers.
    extractor: ExtractionSandbox
    inline_reader: InlineReader

    def close(self) -> None:
        self.extractor.close()
        self.inline_reader.sandbox.close()

    @property
    def lexical(self) -> LexicalIndex:
        """BM25 over the chunks table, in the configured text search language."""
        return LexicalIndex(self.sessionmaker, self.settings.rag.lexical_language)

    @property
    def hybrid(self) -> HybridSearch | None:
        """How searches add BM25 to the vectors; None when hybrid search is off."""
        rag = self.settings.rag
        if not rag.hybrid:
            return None
        return HybridSearch(
            index=self.lexical,
            candidates=rag.candidates,
            rrf_k=rag.rrf_k,
            vector_weight=rag.vector_weight,
            lexical_weight=rag.lexical_weight,
        )


def build_sandboxes(settings: Settings) -> tuple[ExtractionSandbox, InlineReader]:
    """The worker's sandbox, and a separate one with tighter time limits for inline answers."""
    worker = settings.worker
    limits = Limits(
        wall_seconds=worker.extract_timeout_seconds,
        cpu_seconds=worker.extract_cpu_seconds,
        page_seconds=worker.extract_page_seconds,
        memory_mb=worker.extract_memory_mb,
    )
    inline_seconds = settings.rag.inline_timeout_seconds
    inline = Limits(
        wall_seconds=inline_seconds,
        cpu_seconds=max(1, int(inline_seconds)),
        page_seconds=min(worker.extract_page_seconds, inline_seconds),
        memory_mb=worker.extract_memory_mb,
    )
    reader = InlineReader(
        sandbox=ExtractionSandbox(inline, name="inline"),
        chunk_size=settings.rag.chunk_size,
        chunk_overlap=settings.rag.chunk_overlap,
        timeout_seconds=inline_seconds,
    )
    return ExtractionSandbox(limits, name="extract"), reader


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
    extractor, inline_reader = build_sandboxes(settings)
    return Components(
        settings=settings,
        sessionmaker=sessionmaker,
        embedder=embedder,
        vector_store=vector_store,
        llm=LLM(settings.llm),
        storage=FileStorage(settings.files_dir),
        publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        extractor=extractor,
        inline_reader=inline_reader,
    )


def get_components(request: Request) -> Components:
    components: Components = request.app.state.components
    return components


ComponentsDep = Annotated[Components, Depends(get_components)]
