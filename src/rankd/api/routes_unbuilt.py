"""The v1.3 routes this version does not build yet (rankd/unbuilt.py): each answers 501
`not_implemented` saying so, rather than 404 or 405 as if the contract did not name it."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd import unbuilt
from rankd.errors import NotBuilt

router = APIRouter(include_in_schema=False)


def _refuse(method: str, path: str) -> None:
    async def refuse(request: Request) -> Response:
        raise NotBuilt(f"{method} {path} is not built in this version of Rankd yet (CONTRACT v1.3)")

    router.add_api_route(path, refuse, methods=[method], name=f"unbuilt {method} {path}")


for _method, _path in unbuilt.ROUTES:
    _refuse(_method, _path)
