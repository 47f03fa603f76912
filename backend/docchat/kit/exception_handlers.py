"""Every error leaves as `{"detail": ...}` with its status; no stack trace reaches a client.

Under `/v1/` (the OpenAI-compatible API) the body also carries OpenAI's `error` object, so
OpenAI SDKs show the message instead of a bare status code.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from docchat.kit.errors import DocchatError

logger = logging.getLogger("docchat.errors")
OPENAI_PREFIX = "/v1/"
OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
}


def _envelope(
    request: Request, status: int, detail: Any, headers: dict[str, str] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {"detail": detail}
    if request.url.path.startswith(OPENAI_PREFIX):
        message = detail if isinstance(detail, str) else str(jsonable_encoder(detail))
        error_type = OPENAI_ERROR_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        body["error"] = {"message": message, "type": error_type, "code": status}
    return JSONResponse(jsonable_encoder(body), status_code=status, headers=headers)


async def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DocchatError)
    return _envelope(request, exc.status_code, exc.detail(), exc.headers)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _envelope(request, exc.status_code, exc.detail, getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {key: value for key, value in error.items() if key in {"loc", "msg", "type"}}
        for error in exc.errors()
    ]
    for error in errors:
        if isinstance(error.get("msg"), str):
            error["msg"] = _for_people(error["msg"])
    return _envelope(request, 422, errors)


def _for_people(message: str) -> str:
    """Our validators' messages are written for people (an e-mail address's too: see
    `users.emails`): drop pydantic's "Value error, "."""
    return message.removeprefix("Value error, ")


def _is_connection_failure(exc: Exception) -> bool:
    if isinstance(exc, OperationalError | InterfaceError | ConnectionError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """503 when the database cannot be reached; any other database error is our bug: 500."""
    if _is_connection_failure(exc):
        logger.error("database unreachable on %s %r: %s", request.method, request.url.path, exc)
        return _envelope(request, 503, "The database is unavailable; try again shortly")
    return await _unexpected(request, exc)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # %r: a decoded path may hold CR/LF, which must not start a forged line in the log.
    logger.exception("unhandled error on %s %r", request.method, request.url.path, exc_info=exc)
    return _envelope(request, 500, "Internal server error")


def install(app: FastAPI) -> None:
    app.add_exception_handler(DocchatError, _domain_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(DBAPIError, _database_error)
    app.add_exception_handler(ConnectionError, _database_error)
    app.add_exception_handler(Exception, _unexpected)
