"""A cap on every request body, counted as the bytes arrive, whatever the method or framing.

A declared `Content-Length` over the cap is refused before anything is read; a chunked body is
cut off the moment it passes the cap. Uploads get the upload limit, everything else a small
cap for JSON and forms, so no request can make the server buffer more than it allows.

A response sent before its request's body was read to the end (a 401 before an upload's
body, a 413) says `Connection: close`: the server then closes the connection once the
response is out, instead of reading and discarding the rest of the body, however long the
client keeps sending (uvicorn would read on, to reuse the connection).
"""

from __future__ import annotations

from collections.abc import Collection

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docchat.kit.asgi import HTTPMiddleware

CLOSE = (b"connection", b"close")
# Multipart framing and the form's other fields, beyond the file itself.
UPLOAD_SLACK_BYTES = 1024 * 1024


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a body passes its cap. An HTTPException, so FastAPI's body
    parsing lets it through as itself instead of turning it into a 400."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than the limit of {_size(limit)}")


def _size(limit: int) -> str:
    if limit >= 1024 * 1024:
        return f"{limit // (1024 * 1024)} MB"
    return f"{max(1, limit // 1024)} KB"


class BodySizeLimit(HTTPMiddleware):
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        upload_bytes: int,
        upload_paths: Collection[str],
    ) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes
        self.upload_bytes = upload_bytes + UPLOAD_SLACK_BYTES
        self.upload_paths = frozenset(upload_paths)

    def limit_for(self, scope: Scope) -> int:
        if scope["method"] == "POST" and scope["path"].rstrip("/") in self.upload_paths:
            return self.upload_bytes
        return self.max_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit_for(scope)
        headers = Headers(scope=scope)
        declared = headers.get("content-length") or ""
        if declared.isdigit() and int(declared) > limit:
            response = JSONResponse(
                {"detail": BodyTooLarge(limit).detail},
                status_code=413,
                headers={"Connection": "close"},
            )
            await response(scope, receive, send)
            return
        received = 0
        body_read = not _has_body(headers)

        async def counting_receive() -> Message:
            nonlocal received, body_read
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_read = not message.get("more_body", False)
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_read:
                message = {**message, "headers": [*message.get("headers", []), CLOSE]}
            await send(message)

        await self.app(scope, counting_receive, closing_send)


def _has_body(headers: Headers) -> bool:
    """The request announces a body, in chunks or by a length."""
    declared = headers.get("content-length", "").strip()
    return "transfer-encoding" in headers or declared not in ("", "0")
