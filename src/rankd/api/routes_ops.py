"""Operations: liveness, readiness, metrics and the live leaderboard page."""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from rankd import metrics, results_admin
from rankd.api.errors import not_ready
from rankd.api.http import reply, runtime

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=results_admin.Health, summary="The process is up")
async def healthz() -> Response:
    return reply({"status": "ok"})


@router.get(
    "/readyz",
    response_model=results_admin.Ready,
    responses={
        503: {
            "model": results_admin.Ready,
            "description": "status unavailable: a dependency is down",
        }
    },
    summary="200 once it can serve (status ready or degraded), else 503 naming what is down "
    "or recovering",
)
async def readyz(request: Request) -> Response:
    """Readiness: can this instance serve requests?

    503 ``unavailable`` names each dependency that is down (Redis, PostgreSQL, NATS), and
    each that is recovering (``recovering``: a restarted Redis being restored, by a "tail
    replay from sequence N" when it kept its data or a "rebuild from PostgreSQL" when it did
    not, or the log's tail being applied after a dependency came back or at startup, with
    how far): until then reads may miss acknowledged runs. ``redis_restored``, once this
    instance has restored a restarted Redis, says which of the two it did and what it cost.
    With all of them up and recovered the answer is 200, so a load balancer keeps sending
    traffic, but the status is ``degraded`` with ``reasons`` when the PostgreSQL copy is
    behind the log by more than ``RANKD_READY_MAX_LAG_S`` or messages are parked. Neither
    stops a submit or a read: runs are durable in the log and live in Redis; only a rebuild
    from PostgreSQL would miss them for now. Taking every instance out of service for it
    would turn a slow or stuck copy into an outage, so it is reported (here and in
    /metrics) for operators and alerts, not to the load balancer.
    """
    rt = runtime(request)
    checks = await rt.readiness()
    lag = rt.consumer_lag()
    recovering = await rt.recovering()
    # how this instance restored the last Redis restart it saw: tail replay or rebuild
    restored: dict[str, Any] = {}
    if rt.restorer.last is not None:
        restored["redis_restored"] = rt.restorer.last.describe()
    down = sorted(name for name, state in checks.items() if state != "ok")
    if down or recovering:
        body = {"status": "unavailable", "checks": checks, "consumer": lag} | restored
        return not_ready(body | {"recovering": recovering}, down, sorted(recovering))
    reasons = rt.degraded()
    if reasons:
        body = {"status": "degraded", "reasons": reasons, "checks": checks, "consumer": lag}
        return reply(body | restored)
    return reply({"status": "ready", "checks": checks, "consumer": lag} | restored)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics (text exposition format)",
)
async def metrics_text() -> Response:
    # with several workers, every worker's counts summed (metrics.py)
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)


def _static(name: str) -> str:
    return resources.files("rankd.static").joinpath(name).read_text("utf-8")


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def live_page() -> Response:
    return HTMLResponse(_static("index.html"))


# The page's own assets, served by the package: it needs no build step and no CDN.
@router.get("/live.js", include_in_schema=False)
async def live_script() -> Response:
    return Response(_static("live.js"), media_type="text/javascript; charset=utf-8")


@router.get("/live.css", include_in_schema=False)
async def live_style() -> Response:
    return Response(_static("live.css"), media_type="text/css; charset=utf-8")


# The page's icon, shipped in the package (browsers ask for /favicon.ico on every site).
@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response:
    icon = resources.files("rankd.static").joinpath("favicon.ico").read_bytes()
    return Response(icon, media_type="image/x-icon", headers=_ICON_CACHE)


@router.get("/favicon.svg", include_in_schema=False)
async def favicon_svg() -> Response:
    return Response(_static("favicon.svg"), media_type="image/svg+xml", headers=_ICON_CACHE)


_ICON_CACHE = {"Cache-Control": "public, max-age=86400"}
