"""The MCP server at `/mcp`: streamable HTTP, stateless, for personal API keys.

Every HTTP request must carry `Authorization: Bearer dck_...`, a live key with the `read` or
`chat` scope (else 401/403 before the protocol is spoken), and every tool call checks again,
for the scope that tool needs (`read`: search and lists; `chat`: ask), so a key revoked
mid-session stops at its next call. Stateless (no session kept between requests, answers as
JSON): any API process can serve any request, as for the REST routes.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Annotated, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.types import Receive, Scope, Send

from docchat.auth import api_keys
from docchat.auth import service as auth_service
from docchat.auth.scopes import Scope as KeyScope
from docchat.db import session_scope
from docchat.kit.errors import DocchatError, MethodNotAllowed, ServiceUnavailable, Unauthorized
from docchat.kit.version import package_version
from docchat.mcp_server.tools import (
    MAX_PAGE,
    MAX_PASSAGES,
    MAX_QUERY_CHARS,
    Answer,
    CollectionPage,
    DocumentPage,
    LibraryTools,
    SearchResults,
)
from docchat.retrieval.filters import FilterFields
from docchat.users.models import User

PATH = "/mcp"
# A key may open the endpoint with either scope; each tool then needs its own.
ENDPOINT_SCOPES = frozenset({KeyScope.read, KeyScope.chat})
NO_KEY = "Send a personal API key as 'Authorization: Bearer dck_...' (Settings > API keys)"
INSTRUCTIONS = (
    "docchat holds the user's documents and those shared with them. Use search_documents to "
    "find passages (each with its document, page or location and the sentence that matches), "
    "ask to get an answer written from them with [n] citations, and list_collections / "
    "list_documents to find ids to narrow either to."
)

T = TypeVar("T")
Ids = Annotated[list[uuid.UUID], Field(max_length=50)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not api_keys.looks_like_key(token):
        return None
    return token


async def _caller(session: AsyncSession, ctx: Context, needed: KeyScope) -> User:
    """The user the request's key acts for, if it has `needed`; a failure is the tool's."""
    token = _bearer({key.lower(): value for key, value in (ctx.headers or {}).items()})
    if token is None:
        raise ToolError(NO_KEY)
    try:
        user = await api_keys.authenticate(session, token, needed)
        auth_service.require_free_to_act(user)
    except DocchatError as exc:
        raise ToolError(exc.message) from exc
    return user


@contextlib.contextmanager
def _root_logging_kept() -> Iterator[None]:
    """The root logger as it was. `MCPServer()` calls `logging.basicConfig` with a rich
    console handler at INFO: where the process had not configured logging yet (components
    built before `create_app`, as the benchmarks do), every log line of the process then went
    through it, costing the worker a few milliseconds a document. How the process logs is
    `telemetry.configure_logging`'s choice."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def build_server(tools: LibraryTools) -> MCPServer:
    with _root_logging_kept():
        server: MCPServer = MCPServer(
            name="docchat", version=package_version(), instructions=INSTRUCTIONS
        )

    async def run(
        ctx: Context, needed: KeyScope, work: Callable[[AsyncSession, User], Awaitable[T]]
    ) -> T:
        async with session_scope(tools.sessionmaker) as session:
            user = await _caller(session, ctx, needed)
            try:
                return await work(session, user)
            except DocchatError as exc:
                raise ToolError(exc.message) from exc

    @server.tool()
    async def search_documents(
        query: Query,
        ctx: Context,
        collection_ids: Ids | None = None,
        document_ids: Ids | None = None,
        top_k: Annotated[int, Field(ge=1, le=MAX_PASSAGES)] = 5,
    ) -> SearchResults:
        """Search the documents you may read for passages about `query`. Narrow it with
        collection_ids and/or document_ids (from list_collections / list_documents). Each
        passage has its source: document, page or location, a preview and a highlight (the
        sentence or table row that matches, with offsets in the passage). No passages means
        nothing matched well enough."""
        return await run(
            ctx,
            KeyScope.read,
            lambda session, user: tools.search(
                session,
                user,
                query,
                collection_ids=collection_ids or [],
                document_ids=document_ids or [],
                top_k=top_k,
            ),
        )

    @server.tool()
    async def ask(
        question: Query,
        ctx: Context,
        collection_ids: Ids | None = None,
        document_ids: Ids | None = None,
        research: bool = False,
        filters: FilterFields | None = None,
    ) -> Answer:
        """Answer a question from the documents you may read (or the chosen collections and
        documents), citing them as [n] = sources[n-1]. grounded is false when the documents
        hold nothing on it. research: a question of several parts ("what does A do, and when
        did B ...") is searched part by part as well as whole. filters: only documents that
        match every one given (name, kind, year, dates, collection, language). Counts toward
        your daily token quota."""
        return await run(
            ctx,
            KeyScope.chat,
            lambda session, user: tools.ask(
                session,
                user,
                question,
                collection_ids=collection_ids or [],
                document_ids=document_ids or [],
                research=research,
                filters=filters.filters() if filters is not None else None,
            ),
        )

    @server.tool()
    async def list_collections(
        ctx: Context,
        skip: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 50,
    ) -> CollectionPage:
        """The collections you may read (Everyone first), with your role and document count."""
        return await run(
            ctx,
            KeyScope.read,
            lambda session, user: tools.collections(session, user, skip=skip, limit=limit),
        )

    @server.tool()
    async def list_documents(
        ctx: Context,
        collection_id: uuid.UUID | None = None,
        name: Annotated[str | None, Field(max_length=200)] = None,
        skip: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 50,
    ) -> DocumentPage:
        """Documents you may read, newest first: those of one collection, or those whose file
        name contains `name`; status 'completed' ones can be searched."""
        return await run(
            ctx,
            KeyScope.read,
            lambda session, user: tools.documents(
                session, user, collection_id=collection_id, name=name, skip=skip, limit=limit
            ),
        )

    return server


class McpEndpoint:
    """The ASGI app behind `/mcp`: checks the key, then hands the request to the SDK's
    transport. `running()` must span the app's life (the transport's task group)."""

    def __init__(self, tools: LibraryTools) -> None:
        self.server = build_server(tools)
        self.sessionmaker = tools.sessionmaker
        # Behind any host name: a bearer key, not the browser's origin, is what admits a
        # request, so the SDK's DNS-rebinding guard (for servers on localhost) is off.
        self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._transport = StreamableHTTPASGIApp(self.server.session_manager)
        self._running = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            self._running = True
            try:
                yield
            finally:
                self._running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._running:
            raise ServiceUnavailable("The MCP server is not running; try again in a moment")
        if scope.get("method") != "POST":
            # Stateless: no stream to open (GET) and no session to end (DELETE).
            raise MethodNotAllowed("The MCP endpoint takes POST requests only")
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])
        }
        token = _bearer(headers)
        if token is None:
            raise Unauthorized(NO_KEY)
        async with session_scope(self.sessionmaker) as session:
            user = await api_keys.authenticate(session, token, ENDPOINT_SCOPES)
            auth_service.require_free_to_act(user)
        await self._transport(scope, receive, send)


class MountedEndpoint:
    """The route's endpoint: the app's `McpEndpoint`, which its lifespan builds later."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint: McpEndpoint | None = getattr(scope["app"].state, "mcp", None)
        if endpoint is None:
            raise ServiceUnavailable("The MCP server is not running; try again in a moment")
        await endpoint(scope, receive, send)
