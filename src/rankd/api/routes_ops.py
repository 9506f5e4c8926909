"""Operations: liveness, readiness, metrics and the live leaderboard page."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from rankd.api.errors import not_ready
from rankd.api.http import reply, runtime

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> Response:
    return reply({"status": "ok"})


@router.get("/readyz", summary="200 when every dependency answers, else 503 naming them")
async def readyz(request: Request) -> Response:
    rt = runtime(request)
    checks = await rt.readiness()
    lag = rt.consumer_lag()
    down = sorted(name for name, state in checks.items() if state != "ok")
    if down:
        return not_ready({"status": "unavailable", "checks": checks, "consumer": lag}, down)
    return reply({"status": "ready", "checks": checks, "consumer": lag})


@router.get("/metrics", summary="Prometheus metrics")
async def metrics_text() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def live_page() -> Response:
    page = resources.files("rankd.static").joinpath("index.html").read_text("utf-8")
    return HTMLResponse(page)
