"""The hottest routes, dispatched without FastAPI's router and dependency machinery.

A top-10 read, a player's rank and a single-run submit are most of a game's traffic. For
them FastAPI's routing, dependency solving and parameter validation cost more than the
work itself (a Redis round trip). This ASGI middleware recognises those three requests
when every parameter is plainly valid (integers of digits within their bounds, each
parameter once) and calls the very endpoint functions the FastAPI routes call, with the
same arguments. Anything else, an unusual parameter included, goes on to FastAPI, which
validates and answers it as before; so the answers, errors and /openapi.json (still built
from the FastAPI routes) are the same whichever way a request goes.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from rankd import errors
from rankd.api import routes_reads, routes_runs
from rankd.api.errors import rankd_error_response

_DIGITS = re.compile(r"[0-9]{1,10}")


@dataclass(frozen=True, slots=True)
class HotRoute:
    """What RequestMetrics labels a request with (FastAPI sets the matched route)."""

    path: str


TOP = HotRoute("/v1/boards/{board_id}/top")
PLAYER = HotRoute("/v1/boards/{board_id}/players/{player_id}")
RUNS = HotRoute("/v1/boards/{board_id}/runs")

Handler = Callable[[Request], Awaitable[Any]]


def _query(scope: Scope) -> dict[str, str] | None:
    """The query parameters, or None when one repeats (left to FastAPI's rules)."""
    raw = scope.get("query_string", b"")
    if not raw:
        return {}
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    params = dict(pairs)
    return params if len(params) == len(pairs) else None


def _int(params: dict[str, str], name: str, default: int, low: int, high: int) -> int | None:
    """A plain integer parameter within bounds; None: not plainly valid (FastAPI decides)."""
    value = params.get(name)
    if value is None:
        return default
    if not _DIGITS.fullmatch(value):
        return None
    number = int(value)
    return number if low <= number <= high else None


def _where(params: dict[str, str]) -> routes_reads.Where:
    return routes_reads.Where(
        params.get("window"), params.get("period"), params.get("segment"), params.get("viewer")
    )


def _route(scope: Scope) -> tuple[HotRoute, Handler] | None:
    """The hot route this request is, with a handler bound to its arguments."""
    method = scope["method"]
    parts = scope["path"].split("/")
    if len(parts) < 5 or parts[1] != "v1" or parts[2] != "boards" or not parts[3]:
        return None
    board_id = parts[3]
    if method == "POST" and len(parts) == 5 and parts[4] == "runs":
        return RUNS, lambda request: routes_runs.submit_run(board_id, request)
    if method != "GET":
        return None
    params = _query(scope)
    if params is None or "include" in params:  # include=metadata: FastAPI checks the value
        return None
    if len(parts) == 5 and parts[4] == "top":
        n = _int(params, "n", 10, 1, 1000)
        offset = _int(params, "offset", 0, 0, 1_000_000_000)
        if n is None or offset is None:
            return None
        where = _where(params)
        cursor = params.get("cursor")
        return TOP, lambda request: routes_reads.top(board_id, request, where, n, offset, cursor)
    if len(parts) == 6 and parts[4] == "players" and parts[5]:
        accuracy = params.get("accuracy", "exact")
        if accuracy not in ("exact", "approx"):
            return None
        player_id = parts[5]
        where = _where(params)
        return PLAYER, lambda request: routes_reads.player(
            board_id,
            player_id,
            request,
            where,
            accuracy,  # type: ignore[arg-type]
        )
    return None


class HotRoutes:
    """See the module docstring. Sits inside the rate limiter and the request metrics."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _route(scope) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        route, handler = found
        scope["route"] = route
        request = Request(scope, receive)
        try:
            response = await handler(request)
        except errors.RankdError as exc:
            response = rankd_error_response(exc)
        await response(scope, receive, send)
