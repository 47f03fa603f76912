"""A small web server on loopback with the pages the URL-fetch tests ask for."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.support.files import make_pdf
from tests.support.llm_server import LoopbackServer, free_port

PAGE = b"""<!doctype html><html><head><title>Ferry timetable</title></head><body>
<nav>Home</nav><h1>Ferry timetable</h1><h2>Winter</h2>
<p>In winter the first ferry leaves the harbour at 07:40.</p></body></html>"""
LIMIT_BYTES = 2 * 1024 * 1024  # the test settings' MAX_UPLOAD_MB


class Site:
    """A small web server on loopback with the pages the tests ask for."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        routes = [
            Route("/timetable", self._page),
            Route("/dated-timetable", self._dated_page),
            Route("/files/report", self._pdf),
            Route("/huge", self._huge),
            Route("/slow", self._slow),
            Route("/missing", self._missing),
            Route("/to-localhost", self._to_localhost),
            Route("/to-metadata", self._to_metadata),
            Route("/loop", self._loop),
        ]
        self._server = LoopbackServer(Starlette(routes=routes), self.port, "the test web site")

    async def _page(self, _: Request) -> Response:
        return HTMLResponse(PAGE)

    async def _dated_page(self, _: Request) -> Response:
        page = PAGE.replace(b"07:40", b"07:45")  # not the same bytes as /timetable
        return HTMLResponse(page, headers={"Last-Modified": "Sat, 01 Apr 2023 09:30:00 GMT"})

    async def _pdf(self, _: Request) -> Response:
        return Response(
            make_pdf(["The annual report of the ferry company: 1.2 million passengers."]),
            media_type="application/pdf",
            headers={"Content-Disposition": 'attachment; filename="annual-report.pdf"'},
        )

    async def _huge(self, _: Request) -> Response:
        return Response(b"x" * (LIMIT_BYTES + 1), media_type="text/plain")

    async def _slow(self, _: Request) -> Response:
        await asyncio.sleep(5)
        return HTMLResponse(PAGE)

    async def _missing(self, _: Request) -> Response:
        return Response("gone", status_code=404)

    async def _to_localhost(self, _: Request) -> Response:
        # Same machine, another name: not the allowed host.
        return RedirectResponse(f"http://localhost:{self.port}/timetable")

    async def _to_metadata(self, _: Request) -> Response:
        return RedirectResponse("http://169.254.169.254/latest/meta-data/")

    async def _loop(self, _: Request) -> Response:
        return RedirectResponse("/loop")

    def stop(self) -> None:
        self._server.stop()


class DocsSite:
    """A site whose pages the test edits (`pages`: path -> (body, media type)), with a
    robots.txt, an index of /docs/ linking every page under it, and a sitemap of them."""

    def __init__(self, robots: str = "") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.robots = robots
        self.pages: dict[str, tuple[bytes, str]] = {}
        self.broken: set[str] = set()  # paths answered with 500
        # Paths served with a `Last-Modified` header (an HTTP date), and given a `lastmod` in
        # the sitemap (a W3C date).
        self.last_modified: dict[str, str] = {}
        self.lastmod: dict[str, str] = {}
        routes = [Route("/{path:path}", self._serve)]
        self._server = LoopbackServer(Starlette(routes=routes), self.port, "the docs site")

    def _index(self) -> bytes:
        links = "".join(
            f'<li><a href="{path.removeprefix("/docs/")}">{path}</a></li>'
            for path in sorted([*self.pages, *self.broken])
            if path.startswith("/docs/")
        )
        outside = '<a href="/elsewhere.html">out</a> <a href="http://example.com/x">far</a>'
        return f"<html><body><h1>Docs</h1><ul>{links}</ul>{outside}</body></html>".encode()

    def _sitemap(self) -> bytes:
        urls = "".join(
            f"<url><loc>{self.base}{path}</loc>{self._lastmod(path)}</url>"
            for path in sorted(self.pages)
            if path.startswith("/docs/")
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        ).encode()

    def _lastmod(self, path: str) -> str:
        return f"<lastmod>{self.lastmod[path]}</lastmod>" if path in self.lastmod else ""

    async def _serve(self, request: Request) -> Response:
        path = request.url.path
        if path == "/robots.txt":
            return Response(self.robots, media_type="text/plain")
        if path == "/docs/":
            return HTMLResponse(self._index())
        if path == "/docs/sitemap.xml":
            return Response(self._sitemap(), media_type="application/xml")
        if path in self.broken:
            return Response("down", status_code=500)
        if path not in self.pages:
            return Response("not here", status_code=404)
        body, media_type = self.pages[path]
        modified = self.last_modified.get(path)
        headers = {"Last-Modified": modified} if modified else None
        return Response(body, media_type=media_type, headers=headers)

    def stop(self) -> None:
        self._server.stop()
