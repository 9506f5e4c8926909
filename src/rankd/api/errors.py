"""Every error leaves as {"error": {"code", "message"}}; mapped here, in one place."""

from __future__ import annotations

import logging

import psycopg
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from psycopg_pool import PoolTimeout
from redis.exceptions import ConnectionError as RedisConnectionError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from rankd.api.http import JSONBody
from rankd.errors import RankdError

log = logging.getLogger("rankd.api")


def error_response(status: int, code: str, message: str) -> Response:
    return JSONBody({"error": {"code": code, "message": message}}, status_code=status)


async def _rankd_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RankdError)
    return error_response(exc.status, exc.code, exc.message)


async def _validation_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
    message = f"{where}: {first.get('msg', 'invalid value')}" if where else "invalid request"
    return error_response(400, "invalid_request", message)


async def _http_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    code = codes.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal")
    return error_response(exc.status_code, code, str(exc.detail))


async def _dependency_down(_: Request, exc: Exception) -> Response:
    # A store that cannot answer is a 503 the client can retry, not a 500.
    log.warning("dependency unavailable: %r", exc)
    store = "PostgreSQL" if isinstance(exc, psycopg.Error | PoolTimeout) else "Redis"
    return error_response(503, "unavailable", f"{store} is unavailable right now; retry shortly")


async def _unexpected(_: Request, exc: Exception) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "internal", "an unexpected error occurred; it has been logged")


def install(app: FastAPI) -> None:
    app.add_exception_handler(RankdError, _rankd_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    for dependency_error in (psycopg.OperationalError, PoolTimeout, RedisConnectionError):
        app.add_exception_handler(dependency_error, _dependency_down)
    app.add_exception_handler(Exception, _unexpected)
