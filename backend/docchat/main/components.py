"""The composition root: the parts built once at start, and the services made from them.

`Components` holds the edges (database sessions, embedder, vector store, model client, file
storage, broker, file readers) and builds, once, what the app composes from them: the lexical
index, the vector index, the `Retriever`, the `AnswerEngine`, and the services the routes use.
Nothing below the app takes `Components`: routes ask for one part each through the
dependencies of their own package (each reads its one part of `app.state`, set by
`main.app.attach_components`), and services receive only what they use.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

# Every table, so foreign keys (documents -> categories, ...) resolve in a worker-only process.
import docchat.models  # noqa: F401
from docchat.answers.cache import AnswerCache
from docchat.answers.engine import AnswerEngine
from docchat.answers.search_queries import QueryWriter
from docchat.chats.flow import MessageFlow
from docchat.chats.history import Relevance
from docchat.chats.summaries import Summaries
from docchat.config import Settings
from docchat.documents.catalogue import StoredCatalogue
from docchat.documents.passage_identity import StoredIdentities
from docchat.documents.storage import FileStorage, build_storage
from docchat.events.publisher import EventPublisher
from docchat.extraction.bounds import ExpansionLimits
from docchat.extraction.ocr import OcrOptions, find_tesseract
from docchat.extraction.sandbox import ExtractionSandbox, Limits
from docchat.llm.client import LLM
from docchat.llm.embeddings import (
    EMBEDDERS,
    CachedVectors,
    Embedder,
    OpenAIEmbedder,
    local_embedder,
)
from docchat.mcp_server.server import McpEndpoint
from docchat.mcp_server.tools import LibraryTools
from docchat.openai_compat.service import Completions
from docchat.replicas.routing import ReadRouter, Replica
from docchat.retrieval.chroma import ChromaVectorStore
from docchat.retrieval.index import (
    VECTOR_STORES,
    BlockingVectorStore,
    ThreadedIndex,
    VectorIndex,
    VectorStoreSettings,
)
from docchat.retrieval.inline import InlineReader
from docchat.retrieval.lexical import LexicalIndex
from docchat.retrieval.offline_translator import OfflineTranslator
from docchat.retrieval.passage_glosses import PassageGlosses
from docchat.retrieval.query_embedding import shared_query
from docchat.retrieval.rerank import HttpReranker
from docchat.retrieval.retriever import RERANKERS, Reranker, Retriever
from docchat.retrieval.word_by_word import Glossary, shared_glossary
from docchat.sources.folder import FOLDER
from docchat.sources.git import GIT
from docchat.sources.port import SOURCES
from docchat.sources.s3 import S3
from docchat.sources.website import WEBSITE

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
    # Read replicas for questions' reads (DATABASE_REPLICA_URLS); none: the primary answers all.
    replicas: tuple[Replica, ...] = ()
    # Built from the parts above (again by `dataclasses.replace`, which tests use to swap one).
    vector_index: VectorIndex = field(init=False)
    # Sessions for a question's reads: a replica's or the primary's (`replicas.routing`).
    reads: ReadRouter = field(init=False)
    lexical: LexicalIndex = field(init=False)
    retriever: Retriever = field(init=False)
    # Questions in other languages translated with no model (Apertium, dictionaries).
    translator: OfflineTranslator = field(init=False)
    # Chinese passages' English, for BM25 and an English-only embedder.
    glosses: PassageGlosses = field(init=False)
    engine: AnswerEngine = field(init=False)
    # Short texts' vectors for comparing them (a chat's exchanges, cached questions).
    vectors: CachedVectors = field(init=False)
    message_flow: MessageFlow = field(init=False)
    completions: Completions = field(init=False)
    mcp: McpEndpoint = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        self.vector_index = ThreadedIndex(self.vector_store)
        self.reads = ReadRouter(self.sessionmaker, self.replicas)
        self.lexical = LexicalIndex(self.reads, settings.indexing.lexical_language)
        self.retriever = Retriever.from_settings(
            settings.search,
            settings.fusion,
            self.embedder,
            self.vector_index,
            self.lexical,
            build_reranker(settings),
        )
        glossary = build_glossary(settings)
        self.translator = OfflineTranslator(glossary)
        self.glosses = PassageGlosses(glossary)
        self.engine = AnswerEngine(
            llm=self.llm,
            retriever=self.retriever,
            lexical=self.lexical,
            inline_reader=self.inline_reader,
            search=settings.search,
            answers=settings.answers,
            indexing=settings.indexing,
            llm_settings=settings.llm,
            query_writer=QueryWriter(
                translate=settings.translation.translate_questions,
                documents_language=settings.indexing.lexical_language,
                builtin_model=settings.llm.builtin,
                translator=self.translator,
                scope_languages=self.lexical.languages_in,
            ),
            identities=StoredIdentities(self.reads),
            catalogue=StoredCatalogue(self.reads),
            glosses=self.glosses,
        )
        self.vectors = CachedVectors(self.embedder)
        self.message_flow = MessageFlow(
            settings=self.settings,
            sessionmaker=self.sessionmaker,
            engine=self.engine,
            storage=self.storage,
            publisher=self.publisher,
            summaries=Summaries(
                settings=settings.history,
                builtin_model=settings.llm.builtin,
                sessionmaker=self.sessionmaker,
                llm=self.llm,
            ),
            relevance=Relevance(
                self.vectors, question_vector=functools.partial(shared_query, self.embedder)
            ),
            cache=AnswerCache(settings.answer_cache, settings.llm, self.sessionmaker, self.vectors),
            reads=self.reads,
        )
        self.completions = Completions(
            llm_settings=settings.llm,
            search=settings.search,
            answers=settings.answers,
            sessionmaker=self.sessionmaker,
            engine=self.engine,
            llm=self.llm,
            publisher=self.publisher,
            reads=self.reads,
        )
        self.mcp = McpEndpoint(
            LibraryTools(settings.quota, self.sessionmaker, self.retriever, self.completions)
        )

    def close(self) -> None:
        self.extractor.close()
        self.inline_reader.sandbox.close()
        if isinstance(self.embedder, OpenAIEmbedder):
            self.embedder.close()


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
    inline_seconds = settings.answers.inline_timeout_seconds
    inline = Limits(
        wall_seconds=inline_seconds,
        cpu_seconds=max(1, int(inline_seconds)),
        page_seconds=min(worker.extract_page_seconds, inline_seconds),
        memory_mb=worker.extract_memory_mb,
        expansion=expansion,
    )
    reader = InlineReader(
        sandbox=ExtractionSandbox(inline, name="inline"),
        chunk_size=settings.indexing.chunk_size,
        chunk_overlap=settings.indexing.chunk_overlap,
        timeout_seconds=inline_seconds,
    )
    return ExtractionSandbox(limits, name="extract"), reader


# -- the ports' implementations: each registered here, and only here -----------------------


def _chroma(config: VectorStoreSettings) -> ChromaVectorStore:
    settings = config.settings
    return ChromaVectorStore(
        collection=settings.indexing.collection,
        embedding_model=config.embedding_model,
        dimension=config.dimension,
        path=settings.chroma_dir,
        url=settings.chroma_url,
    )


VECTOR_STORES.register("chroma", _chroma)
EMBEDDERS.register("local", local_embedder)
EMBEDDERS.register("openai", OpenAIEmbedder)
RERANKERS.register("http", HttpReranker.from_settings)
SOURCES.register("folder", FOLDER)
SOURCES.register("s3", S3)
SOURCES.register("git", GIT)
SOURCES.register("website", WEBSITE)


def build_vector_store(settings: Settings, embedder: Embedder) -> BlockingVectorStore:
    factory = VECTOR_STORES.get(settings.vector_store)
    return factory(VectorStoreSettings(settings, embedder.name, embedder.dimension))


def build_embedder(settings: Settings) -> Embedder:
    embedding = settings.embedding
    if embedding.model_cache_dir is None:
        embedding = embedding.model_copy(update={"model_cache_dir": settings.data_dir / "models"})
    return EMBEDDERS.get(embedding.backend)(embedding)


def build_glossary(settings: Settings) -> Glossary:
    """The process's dictionaries (compiled in DATA_DIR once, opened in the background)."""
    return shared_glossary(settings.glossary_file, settings.translation.dictionary_folder)


def build_reranker(settings: Settings) -> Reranker | None:
    return RERANKERS.get(settings.rerank.kind)(settings.rerank)


async def build_components(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    replicas: Sequence[Replica] = (),
) -> Components:
    embedder = await asyncio.to_thread(build_embedder, settings)
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
        replicas=tuple(replicas),
    )
