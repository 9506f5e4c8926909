"""Player names."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.errors import InvalidRequest
from rankd.formats import check_player_id

router = APIRouter(tags=["players"])
MAX_NAME = 64


@router.put(
    "/v1/players/{player_id}",
    response_model=schemas.NameOut,
    responses=schemas.ERRORS,
    openapi_extra=schemas.body_schema(schemas.NameIn),
    summary="Set a player's display name (server)",
)
async def set_name(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "server")
    check_player_id(player_id)
    body = await read_json(request)
    name = body.get("name") if isinstance(body, dict) else None
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_NAME
        or not name.isprintable()
        or set(body) != {"name"}
    ):
        raise InvalidRequest(f'the body must be {{"name": "<1..{MAX_NAME} printable characters>"}}')
    await rt.names.set(player_id, name)
    return reply({"player_id": player_id, "name": name})
