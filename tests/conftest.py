"""Shared fixtures: a fresh migrated database, per-test rollback, real Chroma and embedder."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from docchat.config import (
    AnswerCacheSettings,
    AnswerSettings,
    AuthSettings,
    Environment,
    FusionSettings,
    HistorySettings,
    IndexingSettings,
    LLMSettings,
    SearchSettings,
    Settings,
    TranslationSettings,
    WorkerSettings,
)
from docchat.db import create_engine, create_sessionmaker
from docchat.documents.storage import LocalFileStorage
from docchat.events.publisher import EventPublisher
from docchat.llm.client import LLM
from docchat.llm.embeddings import Embedder, LocalMiniLMEmbedder
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components, build_sandboxes, build_vector_store
from tests.support import glossary, ldap_server
from tests.support.database import alembic, create_database, drop_database
from tests.support.embedding import MODEL_CACHE
from tests.support.jobs import remove_jobs, unfinished_jobs
from tests.support.ldap_server import LdapServer
from tests.support.llm_server import ScriptedLLM, start_scripted_llm

FIXTURES = Path(__file__).parent / "fixtures"


@pytest_asyncio.fixture(scope="session")
async def database_url() -> AsyncIterator[str]:
    url = await create_database()
    await alembic(url, "upgrade", "head")
    yield url
    await drop_database(url)


@pytest_asyncio.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=5)
    yield engine
    await engine.dispose()


@pytest_asyncio.fixture
async def connection(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One connection per test inside a transaction that is rolled back at the end."""
    async with engine.connect() as connection:
        transaction = await connection.begin()
        yield connection
        await transaction.rollback()


@pytest.fixture
def sessionmaker(connection: AsyncConnection) -> async_sessionmaker[AsyncSession]:
    # Every commit in the code under test becomes a savepoint of the test's transaction.
    return async_sessionmaker(
        bind=connection,
        expire_on_commit=False,
        autoflush=False,
        join_transaction_mode="create_savepoint",
    )


@pytest_asyncio.fixture
async def session(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    async with sessionmaker() as session:
        yield session


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return LocalMiniLMEmbedder(batch_size=32, cache=MODEL_CACHE)


@pytest.fixture(scope="session")
def scripted_llm() -> Iterator[ScriptedLLM]:
    server = start_scripted_llm()
    yield server
    server.stop()


@pytest.fixture
def fresh_llm(scripted_llm: ScriptedLLM) -> Iterator[ScriptedLLM]:
    """The scripted model with no queued replies and no recorded requests, before and after."""
    scripted_llm.reset()
    yield scripted_llm
    scripted_llm.reset()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def compiled_glossary(data_dir: Path) -> Path:
    """The question dictionaries compiled once, in the run's data folder (where a live server
    on `settings` would compile them); `glossary.seed` links them into another data folder."""
    return glossary.compile_in(data_dir)


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path, scripted_llm: ScriptedLLM) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        environment=Environment.test,
        database_url=database_url,
        data_dir=data_dir,
        max_upload_mb=2,
        # The longest wait between saves of an answer's progress: every session here shares
        # the test's one connection, and a save made while the answer reads the database
        # (slow on a busy CI machine) broke the other's savepoint. Tests of the saves set
        # their own interval.
        answer_progress_seconds=10.0,
        auth=AuthSettings(_env_file=None, secret_key="test-secret-key-of-a-decent-length-0123"),  # type: ignore[call-arg, arg-type]
        llm=LLMSettings(
            _env_file=None,
            base_url=scripted_llm.base_url,
            model="scripted-model",
            allowed_models=["my-favourite", "override", "m-1", "m"],
            max_retries=0,
            timeout_seconds=5,
        ),  # type: ignore[call-arg]
        indexing=IndexingSettings(_env_file=None),  # type: ignore[call-arg]
        search=SearchSettings(_env_file=None),  # type: ignore[call-arg]
        fusion=FusionSettings(_env_file=None),  # type: ignore[call-arg]
        history=HistorySettings(_env_file=None),  # type: ignore[call-arg]
        answer_cache=AnswerCacheSettings(_env_file=None),  # type: ignore[call-arg]
        translation=TranslationSettings(_env_file=None),  # type: ignore[call-arg]
        answers=AnswerSettings(_env_file=None),  # type: ignore[call-arg]
        # No heartbeat and no interleaving while a test's worker reads a document: the shared
        # test connection takes one session at a time, and a busy machine would reach a beat
        # (5 s) or the interleave time (10 s) in some runs and not others, two sessions then
        # meeting on the one connection. Tests of both set them, on sessions of their own.
        worker=WorkerSettings(  # type: ignore[call-arg]
            _env_file=None,
            enabled=False,
            interleave_seconds=3600,
            heartbeat_seconds=1800,
            stale_after_seconds=3600,
        ),
    )


@pytest_asyncio.fixture(scope="session")
async def base_components(settings: Settings, embedder: Embedder) -> AsyncIterator[Components]:
    extractor, inline_reader = build_sandboxes(settings)
    components = Components(
        settings=settings,
        sessionmaker=None,  # type: ignore[arg-type]  # replaced per test
        embedder=embedder,
        vector_store=build_vector_store(settings, embedder),
        llm=LLM(settings.llm),
        storage=LocalFileStorage(settings.files_dir),
        publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        extractor=extractor,
        inline_reader=inline_reader,
    )
    yield components
    await components.llm.close()
    components.close()


@pytest.fixture
def components(
    base_components: Components, sessionmaker: async_sessionmaker[AsyncSession]
) -> Components:
    # Every session of such a test shares its one connection (rolled back at the end), so no
    # two may work at once: a search started ahead of a turn, or a chat's summary written after
    # an answer, would run beside the next statements. Tests of them use `live_components`,
    # whose sessions have connections of their own.
    base = base_components.settings
    search = base.search.model_copy(update={"search_ahead": False})
    history = base.history.model_copy(update={"summarise_history": False})
    settings = base.model_copy(update={"search": search, "history": history})
    return dataclasses.replace(base_components, sessionmaker=sessionmaker, settings=settings)


@pytest.fixture
def app(settings: Settings, components: Components) -> FastAPI:
    app = create_app(settings, run_worker=False)
    attach_components(app, components)
    return app


@pytest_asyncio.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client


@pytest_asyncio.fixture
async def live_components(
    base_components: Components, engine: AsyncEngine
) -> AsyncIterator[Components]:
    """Components whose sessions commit for real, each on its own pooled connection (for
    concurrency: claims, locks and parallel requests behave as in production).

    Jobs such a test queued and left unread are removed after it: every later test's worker
    would otherwise read them again (inside its own rolled-back transaction, so each time)."""
    before = await unfinished_jobs(engine)
    yield dataclasses.replace(base_components, sessionmaker=create_sessionmaker(engine))
    await remove_jobs(engine, await unfinished_jobs(engine) - before)


@pytest_asyncio.fixture
async def live_client(
    settings: Settings, live_components: Components
) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose requests commit for real, on a pool of connections (for concurrency).

    Its data stays in the run's database; tests that use it create their own users.
    """
    app = create_app(settings, run_worker=False)
    attach_components(app, live_components)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as client:
        yield client


@pytest.fixture(scope="session")
def ldap_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LdapServer]:
    """A company directory (OpenLDAP's slapd) on loopback, for the tests of directory logins."""
    if not ldap_server.available():
        pytest.fail(f"The LDAP tests need OpenLDAP's slapd. Install it with: {ldap_server.INSTALL}")
    with ldap_server.running_slapd(tmp_path_factory.mktemp("slapd")) as server:
        yield server
