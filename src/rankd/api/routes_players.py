"""Player profiles: display names and segments."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.errors import InvalidRequest
from rankd.formats import check_player_id, check_segments

router = APIRouter(tags=["players"])
MAX_NAME = 64
PROFILE_FIELDS = frozenset({"name", "segments"})


def _name(body: dict[str, Any]) -> str | None:
    name = body.get("name")
    if name is None:
        return None
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_NAME
        or not name.isprintable()
    ):
        raise InvalidRequest(f"name must be 1..{MAX_NAME} printable characters")
    return name


@router.put(
    "/v1/players/{player_id}",
    response_model=schemas.ProfileOut,
    openapi_extra=schemas.body_schema(schemas.ProfileIn),
    summary="Set a player's display name and/or segments (server)",
)
async def put_profile(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "server")
    check_player_id(player_id)
    body = await read_json(request)
    if not isinstance(body, dict) or not body or set(body) - PROFILE_FIELDS:
        raise InvalidRequest(
            'the body must be {"name": "...", "segments": {"country": "FR"}} '
            "with at least one of the two"
        )
    name = _name(body)
    segments = body.get("segments")
    if segments is not None:
        # any board's dimensions: a run takes the ones its board has
        segments = check_segments(segments, "segments", None)
    if name is None and segments is None:
        raise InvalidRequest("set name or segments (null leaves a field as it is)")
    return reply(await rt.players.put(player_id, name, segments))


@router.get(
    "/v1/players/{player_id}",
    response_model=schemas.ProfileOut,
    summary="A player's profile (server); a player never seen has no name and no segments",
)
async def get_profile(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "server")
    check_player_id(player_id)
    return reply(await rt.players.get(player_id))
