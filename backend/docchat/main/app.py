"""The FastAPI application: routers, error envelope, lifespan that builds the components."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from opentelemetry.sdk.trace import TracerProvider
from starlette.routing import Route

from docchat import metrics
from docchat.account.router import router as account_router
from docchat.admin.audit_router import router as audit_router
from docchat.admin.router import router as admin_router
from docchat.admin.users_router import router as users_admin_router
from docchat.auth.keys_router import router as api_keys_router
from docchat.auth.ratelimit import LoginLimiter, SignupLimiter
from docchat.auth.router import router as auth_router
from docchat.auth.signing_key import with_signing_key
from docchat.categories.router import router as categories_router
from docchat.chats.router import chats_router, messages_router, shared_router
from docchat.chats.schemas import STREAM_EVENTS
from docchat.config import Settings, get_settings
from docchat.db import create_engine, create_sessionmaker, session_scope
from docchat.documents.router import router as documents_router
from docchat.identity.directory import Directory
from docchat.identity.oidc import OidcProvider
from docchat.identity.router import router as login_router
from docchat.kit import exception_handlers, security_headers
from docchat.kit.body_limit import BodySizeLimit
from docchat.kit.heap import freeze_startup_heap
from docchat.kit.openapi import publish_models
from docchat.kit.version import package_version
from docchat.main import docs_pages, doctor, health, telemetry, web_app
from docchat.main.components import Components, build_components
from docchat.mcp_server import server as mcp_server
from docchat.mcp_server.server import MountedEndpoint
from docchat.openai_compat.router import router as openai_router
from docchat.replicas.routing import Replica
from docchat.retrieval.languages import load_identifier
from docchat.sharing.router import collections_router, groups_admin_router, groups_router
from docchat.sources.router import router as sources_router
from docchat.users import service as users_service
from docchat.users.emails import InvalidEmail

logger = logging.getLogger("docchat")
LLM_PROBE_SECONDS = 3.0
# Routes whose body is a file: they get the upload limit instead of the small body cap.
UPLOAD_PATHS = ("/api/v1/documents", "/api/v1/admin/documents")
ComponentsFactory = Callable[[Settings], Awaitable[Components]]


async def _ensure_admin_from_settings(components: Components) -> None:
    settings = components.settings
    if not (settings.admin_email and settings.admin_password):
        return
    try:
        async with session_scope(components.sessionmaker) as session:
            password = settings.admin_password.get_secret_value()
            _, action = await users_service.ensure_admin(
                session, email=settings.admin_email, password=password, reset_password=False
            )
    except InvalidEmail as exc:  # a new account's address, by sign-up's rule
        raise InvalidEmail(f"ADMIN_EMAIL {settings.admin_email!r}: {exc}") from None
    logger.info("administrator %s: %s", settings.admin_email, action)


def _readiness_probes(components: Components) -> dict[str, Callable[[], Awaitable[dict[str, Any]]]]:
    async def vector_store() -> dict[str, Any]:
        await components.vector_index.ping()
        return {"ok": True}

    async def embedder() -> dict[str, Any]:
        await asyncio.to_thread(components.embedder.embed, ["ping"])
        return {"ok": True, "model": components.embedder.name}

    async def llm() -> dict[str, Any]:
        models = await asyncio.wait_for(components.llm.list_models(), timeout=LLM_PROBE_SECONDS)
        return {"ok": True, "models": len(models)}

    return {"vector_store": vector_store, "embedder": embedder, "llm": llm}


def attach_components(app: FastAPI, components: Components) -> None:
    """Hand each part to the routes that read it (every domain's `dependencies.py` reads its
    own part of `app.state`, and nothing reads the whole)."""
    app.state.settings = components.settings
    app.state.sessionmaker = components.sessionmaker
    app.state.storage = components.storage
    app.state.vector_index = components.vector_index
    app.state.message_flow = components.message_flow
    app.state.completions = components.completions
    app.state.mcp = components.mcp
    app.state.readiness_probes = _readiness_probes(components)
    app.state.doctor = doctor.subjects_of(components)


API_ROUTERS = (
    login_router,
    auth_router,
    api_keys_router,
    account_router,
    users_admin_router,
    categories_router,
    documents_router,
    collections_router,
    groups_router,
    chats_router,
    messages_router,
    shared_router,
    admin_router,
    audit_router,
    groups_admin_router,
    sources_router,
)


def create_app(
    settings: Settings | None = None,
    *,
    components_factory: ComponentsFactory | None = None,
    run_worker: bool | None = None,
    tracer_provider: TracerProvider | None = None,
) -> FastAPI:
    """The app. Traces go to `tracer_provider`, else where the `OTEL_*` settings say (off by
    default); the app then owns the provider and shuts it down when it stops."""
    settings = with_signing_key(settings or get_settings())
    telemetry.configure_logging(settings.log_level)
    provider = tracer_provider or telemetry.tracer_provider(settings.tracing)
    app = FastAPI(
        title="docchat",
        version=package_version(),
        summary="Chat with your documents: grounded answers with page-level citations.",
        lifespan=_lifespan(settings, provider, components_factory, run_worker),
        docs_url=None,
        redoc_url=None,
    )
    _install_login(app, settings)
    app.state.alembic_head = doctor.alembic_head()
    _install_middleware(app, settings, provider)
    _install_routes(app)
    web_app.mount(app, settings.frontend_dir)
    return app


Lifespan = Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]


def _lifespan(
    settings: Settings,
    provider: TracerProvider | None,
    components_factory: ComponentsFactory | None,
    run_worker: bool | None,
) -> Lifespan:
    """Tracing on, then the app served (`_serving`); tracing off after."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        traces = None if provider is None else telemetry.Telemetry(provider, settings.tracing)
        if traces is not None:
            traces.start()
        try:
            worker = settings.worker.enabled if run_worker is None else run_worker
            async with _serving(app, settings, traces, components_factory, run_worker=worker):
                yield
        finally:
            if traces is not None:
                traces.stop()

    return lifespan


@contextlib.asynccontextmanager
async def _serving(
    app: FastAPI,
    settings: Settings,
    traces: telemetry.Telemetry | None,
    components_factory: ComponentsFactory | None,
    *,
    run_worker: bool,
) -> AsyncIterator[None]:
    """The components built, the worker running, the MCP transport up; all closed after."""
    engine = None
    if components_factory is not None:
        components = await components_factory(settings)
    else:
        engine = create_engine(settings.database_url)
        replicas = [Replica.open(url) for url in settings.database_replica_urls]
        if traces is not None:
            for instrumented in (engine, *(replica.engine for replica in replicas)):
                traces.instrument_engine(instrumented)
        components = await build_components(settings, create_sessionmaker(engine), replicas)
    attach_components(app, components)
    components.translator.prepare()  # compiled in the background the first time
    # Read while the server starts taking requests, not by the first question.
    app.state.identifier_loading = asyncio.ensure_future(asyncio.to_thread(load_identifier))
    await _ensure_admin_from_settings(components)
    stop = asyncio.Event()
    background = _start_background_work(app, components, stop) if run_worker else None
    freeze_startup_heap()
    try:
        async with components.mcp.running():
            yield
    finally:
        stop.set()
        if background is not None:
            await background
        await _close(components, owned=components_factory is None)
        if engine is not None:
            await components.reads.close()
            await engine.dispose()


def _start_background_work(
    app: FastAPI, components: Components, stop: asyncio.Event
) -> asyncio.Future[Any]:
    """The ingestion worker, the sources' syncer and the upgrade of stored documents, until
    `stop` is set."""
    from docchat.ingestion import upgrade
    from docchat.ingestion.worker import IngestionWorker
    from docchat.sources.sync import SourceSyncer

    worker = IngestionWorker(components)
    # Documents an earlier version stored are made searchable again beside the lanes.
    app.state.upgrading = asyncio.ensure_future(upgrade.run_at_start(components, stop))
    return asyncio.gather(
        worker.run_forever(stop),
        SourceSyncer(components).run_forever(stop),
        app.state.upgrading,
    )


async def _close(components: Components, *, owned: bool) -> None:
    """Stop the answers being written, then close the clients (and the components when this
    app built them)."""
    await components.message_flow.close()
    await components.llm.close()
    await components.retriever.close()
    await components.publisher.close()
    if owned:
        components.close()


def _install_login(app: FastAPI, settings: Settings) -> None:
    """The login and sign-up limits, and the directory and single sign-on when configured."""
    auth = settings.auth
    app.state.login_limiter = LoginLimiter(
        auth.login_max_failures,
        auth.login_window_seconds,
        address_failures=auth.login_address_max_failures,
        account_failures=auth.login_account_max_failures,
    )
    app.state.signup_limiter = SignupLimiter(
        auth.register_max_per_address, auth.login_window_seconds
    )
    app.state.directory = Directory(settings.ldap) if settings.ldap.enabled else None
    app.state.oidc = OidcProvider(settings.oidc) if settings.oidc.enabled else None


def _install_middleware(app: FastAPI, settings: Settings, provider: TracerProvider | None) -> None:
    exception_handlers.install(app)
    metrics.install(app)
    if provider is not None and settings.tracing.instruments("fastapi"):
        telemetry.instrument_app(app, provider)
    security_headers.install(app)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_request_bytes,
        upload_bytes=settings.max_upload_bytes,
        upload_paths=UPLOAD_PATHS,
    )
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_credentials=True,
            allow_methods=["*"],
            allow_headers=["*"],
        )


def _install_routes(app: FastAPI) -> None:
    """The API under /api/v1, the OpenAI-compatible and MCP endpoints, health and docs pages."""
    for router in API_ROUTERS:
        app.include_router(router, prefix="/api/v1")
    app.include_router(openai_router)
    app.router.routes.append(Route(mcp_server.PATH, MountedEndpoint(), name="mcp"))
    app.include_router(health.router)
    docs_pages.install(app)
    publish_models(app, STREAM_EVENTS.values())
