"""Every error leaves as {"error": {"code", "message"}}; mapped here, in one place."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from rankd import errors
from rankd.api.http import JSONBody
from rankd.logs import Repeats

logger = logging.getLogger("rankd.api")
_REPEATS = Repeats()


# Every error class's HTTP status (CONTRACT.md names them per endpoint).
STATUS: dict[type[errors.RankdError], int] = {
    errors.InvalidRequest: 400,
    errors.ScoreOutOfRange: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.BoardNotFound: 404,
    errors.PlayerNotRanked: 404,
    errors.HoldNotFound: 404,
    errors.BoardImmutableField: 409,
    errors.BoardFull: 409,
    errors.NotOpen: 409,
    errors.RunConflict: 409,
    errors.BodyTooLarge: 413,
    errors.UnsupportedMediaType: 415,
    errors.RateLimited: 429,
    errors.ClientGone: 499,  # nginx's code for it; the client never sees the answer
    errors.NotEnabled: 501,
    errors.Unavailable: 503,
    errors.TooManyStreams: 503,
}


def status_of_code(code: str) -> int:
    """The HTTP status a contract error code is sent with (api/openapi.py documents each
    route's codes with it); KeyError for a code no error class has."""
    for cls, status in STATUS.items():
        if cls.code == code:
            return status
    raise KeyError(code)


def status_of(exc: errors.RankdError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    return JSONBody({"error": {"code": code, "message": message}}, status, headers)


def response_for(exc: errors.RankdError) -> Response:
    """An error's response: its status, its body, and Retry-After when it has one."""
    headers = None
    if isinstance(exc, errors.RateLimited):
        headers = {"Retry-After": str(exc.retry_after_s)}
    return error_response(status_of(exc), exc.code, exc.message, headers)


def not_ready(body: dict[str, Any], down: list[str], recovering: Sequence[str] = ()) -> Response:
    """/readyz when a dependency is down or recovering: its report plus the error shape,
    503."""
    said = [f"{', '.join(down)} down"] if down else []
    said += [f"{', '.join(recovering)} recovering"] if recovering else []
    message = f"not ready: {'; '.join(said)}"
    return JSONBody({**body, "error": {"code": "unavailable", "message": message}}, 503)


async def _rankd_error(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.RankdError)
    return rankd_error_response(exc)


def rankd_error_response(exc: errors.RankdError) -> Response:
    """The answer to one of the project's errors (also for api/fastpath.py's routes)."""
    status = status_of(exc)
    if isinstance(exc, errors.ClientGone):
        logger.debug("client gone: %s", exc.message)
    elif status >= 500 and (held := _REPEATS.allow(f"{exc.code}: {exc.message}")) is not None:
        # a store that cannot answer: the client retries; the cause is for the operator,
        # once a second per kind of failure, however many requests meet it
        more = f"; {held} more like it in the last second or more" if held else ""
        logger.warning("%s: %s (%s)%s", exc.code, exc.message, causes(exc), more)
    return response_for(exc)


def causes(exc: BaseException, depth: int = 4) -> str:
    """The chain beneath ``exc``, innermost last: a wrapped error (a run logged but not
    applied, over PostgreSQL unavailable, over a lock timeout) says what failed only at its
    root."""
    chain: list[str] = []
    cause = exc.__cause__
    while cause is not None and len(chain) < depth:
        chain.append(repr(cause)[:300])
        cause = cause.__cause__
    return " <- ".join(chain) if chain else "no cause"


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


async def _unexpected(_: Request, exc: Exception) -> Response:
    logger.exception("unhandled error", exc_info=exc)
    return error_response(500, "internal", "an unexpected error occurred; it has been logged")


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.RankdError, _rankd_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
