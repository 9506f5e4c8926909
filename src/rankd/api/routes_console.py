"""The moderation and live-ops console at /console: a static page, its script and its style,
shipped in the package (rankd/static/console/) with no build step and nothing from a CDN.

The page holds no powers of its own: it signs in with an admin key (kept in the tab's
sessionStorage only) and does everything through the public admin API, so the console and
the API cannot disagree. Its Content-Security-Policy lets it load only its own files and
call only this origin: no inline script, no other origin, no frames, no form posts.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from fastapi import APIRouter
from starlette.responses import Response

router = APIRouter(include_in_schema=False)

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
# on the page and its assets alike: nothing cached (a new release's script and page match),
# nothing sniffed, no referrer sent to anyone
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@lru_cache(maxsize=4)  # three small files, read once per process
def _asset(name: str) -> bytes:
    return resources.files("rankd.static").joinpath("console").joinpath(name).read_bytes()


@router.get("/console")
async def console_page() -> Response:
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get("/console/console.js")
async def console_script() -> Response:
    return Response(
        _asset("console.js"), media_type="text/javascript; charset=utf-8", headers=HEADERS
    )


@router.get("/console/console.css")
async def console_style() -> Response:
    return Response(_asset("console.css"), media_type="text/css; charset=utf-8", headers=HEADERS)
