"""The FastAPI application: routers, error mapping, request metrics, lifespan."""

from __future__ import annotations

import gc
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rankd import __version__, metrics
from rankd.api import (
    docs_pages,
    errors,
    openapi,
    routes_boards,
    routes_console,
    routes_leagues,
    routes_live,
    routes_moderation,
    routes_ops,
    routes_player_events,
    routes_players,
    routes_reads,
    routes_runs,
    routes_tokens,
    routes_tournaments,
)
from rankd.api.fastpath import HotRoutes
from rankd.api.http import JSONBody
from rankd.api.rate_limit import RateLimit
from rankd.runtime import Runtime
from rankd.settings import Settings

access_log = logging.getLogger("rankd.access")
# admin routes whose request counts would reveal moderation (bans, holds)
_MODERATION = re.compile(r"/bans?(/|$)|/holds(/|$)")


class RequestMetrics:
    """Latency per route and status class, and the access log (one line per request:
    method, path, status, ms), as a plain ASGI middleware: the decorator form
    (BaseHTTPMiddleware) runs each request through extra tasks and streams."""

    def __init__(self, app: ASGIApp, *, log_requests: bool = True) -> None:
        self.app = app
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", "unmatched")
            method = scope["method"]
            if _MODERATION.search(route):
                # /metrics is public: per-route counts of bans, unbans and hold decisions
                # would tell anyone how many players are banned; one label for them all
                method, route = "*", "(moderation)"
            metrics.REQUESTS.labels(method, route, f"{status // 100}xx").observe(seconds)
            if self.log_requests and access_log.isEnabledFor(logging.INFO):
                # the path without its query: ids are enough to find a request, and query
                # strings (viewer=, ids=) need not end up in log files
                access_log.info(
                    "%s %s %d %.1fms", scope["method"], scope["path"], status, seconds * 1000
                )


def create_app(settings: Settings | None = None, *, tune_gc: bool = False) -> FastAPI:
    """The app; ``tune_gc`` (set by ``rankd serve``, not by tests) retunes the interpreter's
    garbage collector once the app has started."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.build(settings)
        try:
            await runtime.open()
        except BaseException as exc:
            # close what did open (pools, the log's reconnect loop), or the process hangs
            # on them after uvicorn gives up; then say why in one line (StartupErrors)
            await runtime.close()
            app.state.startup_error = _one_line(exc)
            raise
        app.state.runtime = runtime
        if tune_gc:
            # Long-lived objects made at start never need scanning again, and a young
            # generation larger than the default 700 keeps collections off the request path.
            gc.freeze()
            gc.set_threshold(20_000, 20, 20)
        try:
            yield
        finally:
            await runtime.close()

    # /docs and /redoc with Swagger UI and ReDoc shipped inside fastapi-offline, served from
    # this app: no CDN, so the pages work on a machine without internet access.
    app = FastAPIOffline(
        title="Rankd",
        version=__version__,
        description="Real-time leaderboards for games. Every error is "
        '`{"error": {"code": "<snake_case>", "message": "..."}}`; each operation lists the '
        "codes it can send. Admin and server routes take `Authorization: Bearer <key>` "
        "(the Authorize button); reads are public.",
        default_response_class=JSONBody,
        lifespan=lifespan,
        generate_unique_id_function=lambda route: route.name,  # operationIds: put_board, top...
        static_url="/docs/assets",
        redoc_url=None,  # served by api/docs_pages.py, without ReDoc's CDN logo
        # validatorUrl null: Swagger UI would otherwise show a badge fetched from the internet
        swagger_ui_parameters={"persistAuthorization": True, "validatorUrl": None},
    )
    errors.install(app)
    openapi.install(app)
    for module in (
        routes_boards,
        routes_runs,
        routes_reads,
        routes_players,
        routes_tokens,
        routes_tournaments,
        routes_leagues,
        routes_moderation,
        routes_live,
        routes_player_events,
        routes_ops,
        docs_pages,
        routes_console,
    ):
        app.include_router(module.router)

    if settings.fast_routes:
        app.add_middleware(HotRoutes)  # inside the rate limit: see api/fastpath.py
    # inside RequestMetrics: refused requests are timed (and logged) too
    app.add_middleware(RateLimit)
    app.add_middleware(RequestMetrics, log_requests=settings.access_log)
    if settings.cors_origins:
        # outermost: refusals (429, 401) carry the CORS headers too, or a browser page
        # could not read why it was refused
        app.add_middleware(CORSMiddleware, **cors_options(settings.cors_origins))
    app.add_middleware(StartupErrors)
    return app


def cors_options(origins: list[str]) -> dict[str, Any]:
    """Cross-origin access for browser games (RANKD_CORS_ORIGINS). ``*``: any page may read
    the public API (GET, no Authorization header: a preflight for anything else fails). A
    list: those pages may also send keys and player tokens (Authorization) and write. Never
    credentials (cookies): Rankd reads none, so no page's cookies are sent along."""
    public = origins == ["*"]
    return {
        "allow_origins": origins,
        "allow_methods": ["GET"] if public else ["GET", "POST", "PUT", "DELETE"],
        "allow_headers": [] if public else ["Authorization", "Content-Type"],
        "allow_credentials": False,
        "expose_headers": ["Retry-After"],
        "max_age": 600,
    }


def _one_line(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    why = f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
    return f"startup failed: {type(exc).__name__}: {why}".splitlines()[0][:500]


class StartupErrors:
    """A failed startup reported in one line (the lifespan's reason) instead of the
    traceback Starlette hands uvicorn to log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        state = scope["app"].state

        async def one_line(message: Message) -> None:
            if message["type"] == "lifespan.startup.failed":
                message = {**message, "message": getattr(state, "startup_error", "")}
            await send(message)

        await self.app(scope, receive, one_line)
