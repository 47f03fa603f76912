"""Every error leaves as `{"detail": ...}` with its status; no stack trace reaches a client."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from docchat.kit.errors import DocchatError

logger = logging.getLogger("docchat.errors")


async def _domain_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DocchatError)
    return JSONResponse({"detail": exc.detail()}, status_code=exc.status_code, headers=exc.headers)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse(
        {"detail": exc.detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
    )


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {key: value for key, value in error.items() if key in {"loc", "msg", "type"}}
        for error in exc.errors()
    ]
    return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=422)


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    logger.error("database error on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse({"detail": "The database is unavailable; try again shortly"}, 503)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"detail": "Internal server error"}, status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(DocchatError, _domain_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(DBAPIError, _database_unavailable)
    app.add_exception_handler(ConnectionError, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected)
