"""Serving the built web app: compressed, cached as long as its file names allow.

Vite puts a hash of their content in the names of the files under `assets/`, so those never
change and are cached for a year (`immutable`); `index.html` names the current ones and is
revalidated on every load (`no-cache`, answered with 304 while unchanged). Text files are sent
gzip-compressed to clients that accept it. The web app's own addresses (a chat, the admin
page...) are pages of the app: loading one directly, or reloading it, gets `index.html`, which
then shows that page. Without a build, `/` explains how to reach the API.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response
from starlette.types import Scope

HASHED_ASSETS = "assets"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# Smaller responses gain less from compression than it costs.
COMPRESS_FROM_BYTES = 1024
# The addresses the web app shows in the address bar (kept in step with frontend/src/routes.ts).
APP_PAGES = re.compile(r"((chats|shared)/[0-9a-fA-F-]{36}|admin|account|collections)/?")

PLACEHOLDER_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>docchat</title></head><body style="font-family:sans-serif;max-width:40rem;margin:3rem auto">
<h1>docchat is running</h1><p>The web app has not been built. The whole API is usable
from <a href="/docs">/docs</a>: register, log in, upload documents and ask questions.</p>
</body></html>"""


class WebAppFiles(StaticFiles):
    """Static files with the cache policy above."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        hashed = Path(full_path).parent.name == HASHED_ASSETS
        response.headers["Cache-Control"] = IMMUTABLE if hashed else REVALIDATE
        return response

    async def get_response(self, path: str, scope: Scope) -> Response:
        if APP_PAGES.fullmatch(path):
            path = "index.html"
        return await super().get_response(path, scope)


def mount(app: FastAPI, folder: Path) -> None:
    if (folder / "index.html").is_file():
        files = WebAppFiles(directory=folder, html=True)
        app.mount("/", GZipMiddleware(files, minimum_size=COMPRESS_FROM_BYTES), name="frontend")
        return

    @app.get("/", include_in_schema=False)
    async def placeholder() -> HTMLResponse:
        return HTMLResponse(PLACEHOLDER_PAGE)
