"""The FastAPI application: routers, error mapping, request metrics, lifespan."""

from __future__ import annotations

import gc
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rankd import __version__, metrics
from rankd.api import (
    errors,
    routes_boards,
    routes_live,
    routes_ops,
    routes_players,
    routes_reads,
    routes_runs,
)
from rankd.api.http import JSONBody
from rankd.runtime import Runtime
from rankd.settings import Settings


class RequestMetrics:
    """Latency per route and status class, as a plain ASGI middleware: the decorator form
    (BaseHTTPMiddleware) runs each request through extra tasks and streams."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
            path = getattr(scope.get("route"), "path", "unmatched")
            metrics.REQUESTS.labels(scope["method"], path, f"{status // 100}xx").observe(
                time.perf_counter() - started
            )


def create_app(settings: Settings | None = None, *, tune_gc: bool = False) -> FastAPI:
    """The app; ``tune_gc`` (set by ``rankd serve``, not by tests) retunes the interpreter's
    garbage collector once the app has started."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.build(settings)
        await runtime.open()
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

    app = FastAPI(
        title="Rankd",
        version=__version__,
        description="Real-time leaderboards for games. Errors: "
        '{"error": {"code": "<snake_case>", "message": "..."}}.',
        default_response_class=JSONBody,
        lifespan=lifespan,
    )
    errors.install(app)
    for module in (
        routes_boards,
        routes_runs,
        routes_reads,
        routes_live,
        routes_players,
        routes_ops,
    ):
        app.include_router(module.router)

    app.add_middleware(RequestMetrics)
    return app
