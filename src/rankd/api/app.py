"""The FastAPI application: routers, error mapping, request metrics, lifespan."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from rankd import __version__, metrics
from rankd.api import errors, routes_boards, routes_ops, routes_players, routes_reads, routes_runs
from rankd.api.http import JSONBody
from rankd.runtime import Runtime
from rankd.settings import Settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.build(settings)
        await runtime.open()
        app.state.runtime = runtime
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
    for module in (routes_boards, routes_runs, routes_reads, routes_players, routes_ops):
        app.include_router(module.router)

    @app.middleware("http")
    async def observe(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.REQUESTS.labels(request.method, path, f"{response.status_code // 100}xx").observe(
            time.perf_counter() - started
        )
        return response

    return app
