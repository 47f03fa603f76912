"""The composition root: the parts built once at start, and the services made from them.

`Components` holds the edges (database sessions, embedder, vector store, model client, file
storage, broker, file readers) and builds, once, what the app composes from them: the lexical
index, the vector index, the `Retriever`, the `AnswerEngine`, and the services the routes use.
Nothing below the app takes `Components`: routes ask for one part each through the
dependencies in `docchat.dependencies`, and services receive only what they use.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.answers.engine import AnswerEngine
from docchat.chats.flow import MessageFlow
from docchat.config import Settings
from docchat.documents.storage import FileStorage, build_storage
from docchat.events.publisher import EventPublisher
from docchat.extraction.bounds import ExpansionLimits
from docchat.extraction.ocr import OcrOptions, find_tesseract
from docchat.extraction.sandbox import ExtractionSandbox, Limits
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder
from docchat.openai_compat.service import Completions
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import BlockingVectorStore, ThreadedIndex, VectorIndex
from docchat.retrieval.inline import InlineReader
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.retriever import Retriever

logger = logging.getLogger(__name__)


@dataclass
class Components:
    settings: Settings
    sessionmaker: async_sessionmaker[AsyncSession]
    embedder: Embedder
    vector_store: BlockingVectorStore
    llm: LLM
    storage: FileStorage
    publisher: EventPublisher
    # Files are read in sandboxed child processes: one for the worker, one for inline answers.
    extractor: ExtractionSandbox
    inline_reader: InlineReader
    # Built from the parts above (again by `dataclasses.replace`, which tests use to swap one).
    vector_index: VectorIndex = field(init=False)
    lexical: LexicalIndex = field(init=False)
    retriever: Retriever = field(init=False)
    engine: AnswerEngine = field(init=False)
    message_flow: MessageFlow = field(init=False)
    completions: Completions = field(init=False)

    def __post_init__(self) -> None:
        rag = self.settings.rag
        self.vector_index = ThreadedIndex(self.vector_store)
        self.lexical = LexicalIndex(self.sessionmaker, rag.lexical_language)
        self.retriever = Retriever.from_settings(
            rag, self.embedder, self.vector_index, self.lexical, self.settings.rerank
        )
        self.engine = AnswerEngine(
            llm=self.llm,
            retriever=self.retriever,
            lexical=self.lexical,
            inline_reader=self.inline_reader,
            rag=rag,
            llm_settings=self.settings.llm,
        )
        self.message_flow = MessageFlow(
            settings=self.settings,
            sessionmaker=self.sessionmaker,
            engine=self.engine,
            storage=self.storage,
            publisher=self.publisher,
        )
        self.completions = Completions(
            settings=self.settings,
            sessionmaker=self.sessionmaker,
            engine=self.engine,
            llm=self.llm,
            publisher=self.publisher,
        )

    def close(self) -> None:
        self.extractor.close()
        self.inline_reader.sandbox.close()


def ocr_options(settings: Settings) -> OcrOptions | None:
    """OCR as configured, if this machine has Tesseract and its languages (blocking: it asks
    Tesseract once)."""
    if not settings.ocr.enabled:
        return None
    ocr = settings.ocr
    return find_tesseract(
        OcrOptions(
            languages=ocr.languages,
            page_seconds=ocr.page_seconds,
            max_pages=ocr.max_pages,
            max_megapixels=ocr.max_megapixels,
        )
    )


def build_sandboxes(settings: Settings) -> tuple[ExtractionSandbox, InlineReader]:
    """The worker's sandbox (with OCR when this machine has it), and a separate one with
    tighter time limits and no OCR for inline answers. Blocking."""
    worker = settings.worker
    expansion = ExpansionLimits(
        text_ratio=worker.extract_text_ratio,
        text_floor_chars=worker.extract_text_floor_chars,
        max_chunks=worker.max_chunks,
    )
    limits = Limits(
        wall_seconds=worker.extract_timeout_seconds,
        cpu_seconds=worker.extract_cpu_seconds,
        page_seconds=worker.extract_page_seconds,
        memory_mb=worker.extract_memory_mb,
        ocr=ocr_options(settings),
        expansion=expansion,
    )
    inline_seconds = settings.rag.inline_timeout_seconds
    inline = Limits(
        wall_seconds=inline_seconds,
        cpu_seconds=max(1, int(inline_seconds)),
        page_seconds=min(worker.extract_page_seconds, inline_seconds),
        memory_mb=worker.extract_memory_mb,
        expansion=expansion,
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
    extractor, inline_reader = await asyncio.to_thread(build_sandboxes, settings)
    storage = build_storage(settings.storage, settings.files_dir)
    swept = await storage.sweep_staging()
    if swept:
        logger.warning("removed %d temporary files left by a process that stopped", swept)
    return Components(
        settings=settings,
        sessionmaker=sessionmaker,
        embedder=embedder,
        vector_store=vector_store,
        llm=LLM(settings.llm),
        storage=storage,
        publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        extractor=extractor,
        inline_reader=inline_reader,
    )
