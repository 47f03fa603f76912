"""Headers every response carries; pages of the web app also get a Content-Security-Policy."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from docchat.kit.asgi import HTTPMiddleware

BASE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
# The app loads only its own scripts; PDFs open from blob: URLs it creates; the build inlines
# KaTeX's smallest fonts as data: URLs.
APP_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "font-src 'self' data:; "
    "img-src 'self' data: blob:; object-src 'self' blob:; frame-src 'self' blob:; "
    "connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI and ReDoc pages start with an inline script of their own.
DOCS_PATHS = ("/docs", "/redoc")


class SecurityHeadersMiddleware(HTTPMiddleware):
    """Adds the headers as the response starts."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in BASE_HEADERS.items():
                    headers.setdefault(name, value)
                is_page = headers.get("content-type", "").startswith("text/html")
                if is_page and not path.startswith(DOCS_PATHS):
                    headers.setdefault("Content-Security-Policy", APP_CSP)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI) -> None:
    app.add_middleware(SecurityHeadersMiddleware)
