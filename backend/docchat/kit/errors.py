"""Domain errors carry their HTTP status; one handler renders them as `{"detail": ...}`."""

from __future__ import annotations

from typing import Any


class DocchatError(Exception):
    status_code = 500
    message = "Internal error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        self.message = message or self.message
        self.headers = headers
        super().__init__(self.message)

    def detail(self) -> Any:
        return self.message


class BadRequest(DocchatError):
    status_code = 400
    message = "Bad request"


class Unauthorized(DocchatError):
    status_code = 401
    message = "Not authenticated"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(DocchatError):
    status_code = 403
    message = "Not allowed"


class NotFound(DocchatError):
    status_code = 404
    message = "Not found"


class Conflict(DocchatError):
    status_code = 409
    message = "Conflict"


class MethodNotAllowed(DocchatError):
    status_code = 405
    message = "Method not allowed"

    def __init__(self, message: str | None = None, *, allow: str = "POST") -> None:
        super().__init__(message, headers={"Allow": allow})


class PayloadTooLarge(DocchatError):
    status_code = 413
    message = "Payload too large"


class UnsupportedMediaType(DocchatError):
    status_code = 415
    message = "Unsupported media type"


class Unprocessable(DocchatError):
    status_code = 422
    message = "Unprocessable entity"


class TooManyRequests(DocchatError):
    status_code = 429
    message = "Too many requests"


class UpstreamError(DocchatError):
    """A dependency (LLM, embedder) answered with an error."""

    status_code = 502
    message = "An upstream service failed"


class ServiceUnavailable(DocchatError):
    status_code = 503
    message = "Service unavailable"


class UpstreamTimeout(DocchatError):
    status_code = 504
    message = "An upstream service timed out"
