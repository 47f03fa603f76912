"""Headers every response carries; pages of the web app also get a Content-Security-Policy."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

BASE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
# The app loads only its own scripts; PDFs open from blob: URLs it creates.
APP_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; object-src 'self' blob:; frame-src 'self' blob:; "
    "connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI and ReDoc pages start with an inline script of their own.
DOCS_PATHS = ("/docs", "/redoc")


def install(app: FastAPI) -> None:
    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        for name, value in BASE_HEADERS.items():
            response.headers.setdefault(name, value)
        is_page = response.headers.get("content-type", "").startswith("text/html")
        if is_page and not request.url.path.startswith(DOCS_PATHS):
            response.headers.setdefault("Content-Security-Policy", APP_CSP)
        return response
