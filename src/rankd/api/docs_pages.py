"""/redoc, served whole from this app.

fastapi-offline ships ReDoc's script, but the script itself fetches the "powered by"
logo from Redoc's CDN when the page renders, so on a machine without internet access the
page asks the network anyway. The page here loads a copy of the script with that one URL
replaced by an inline empty image (ReDoc hides the logo when it cannot show it).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

router = APIRouter()

REDOC_SCRIPT = Path(fastapi_offline.__file__).parent / "static" / "redoc.standalone.js"
CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
# an empty SVG as a data URI: nothing to fetch (no quotes: it sits in a JS string)
NO_LOGO = "data:image/svg+xml,%3Csvg%20xmlns=%27http://www.w3.org/2000/svg%27/%3E"
SCRIPT_PATH = "/docs/redoc.js"


@lru_cache(maxsize=1)  # one file, about 1 MB, read once
def redoc_script() -> bytes:
    return REDOC_SCRIPT.read_bytes().replace(CDN_LOGO.encode(), NO_LOGO.encode())


@router.get("/redoc", include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_redoc_html(
        openapi_url=f"{root}/openapi.json",
        title="Rankd - ReDoc",
        redoc_js_url=f"{root}{SCRIPT_PATH}",
        with_google_fonts=False,
        redoc_favicon_url=f"{root}/docs/assets/favicon.png",
    )


@router.get(SCRIPT_PATH, include_in_schema=False)
async def redoc_js() -> Response:
    return Response(
        redoc_script(),
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )
