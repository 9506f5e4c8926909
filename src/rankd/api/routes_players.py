"""Player profiles: display names and segments."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd import results, results_admin
from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.errors import InvalidRequest
from rankd.formats import check_player_id, check_segments
from rankd.results import MAX_NAME
from rankd.results_admin import PlayerErased
from rankd.stores.moderation import is_banned

router = APIRouter(tags=["players"])
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
    response_model=results.Profile,
    openapi_extra=schemas.body_schema(results.ProfileUpdate, schemas.PROFILE_IN_EXAMPLE),
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
    response_model=results.Profile,
    summary="A player's profile (server); a player never seen has no name and no segments",
    description="With an admin key the profile also says whether the player is banned "
    "(`banned`); a server key's answer never does.",
)
async def get_profile(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    role = rt.auth.require(request, "server")
    check_player_id(player_id)
    profile = await rt.players.get(player_id)
    if role == "admin":
        profile["banned"] = await is_banned(rt.pg, player_id)
    return reply(profile)


@router.delete(
    "/v1/players/{player_id}",
    response_model=results_admin.PlayerErased,
    summary="Erase a player everywhere, for a privacy request (admin)",
    description="From the answer on, no read, archive, rebuild or replay shows the player "
    "or their runs; their name and profile are gone and the ranks behind them close up. "
    "The run log's copies of their runs are securely deleted right after (see the README, "
    "Erasure). Runs sent for the id afterwards are a new player's.",
)
async def erase_player(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    check_player_id(player_id)
    await rt.deletions.erase_player(player_id)
    body: PlayerErased = {"player_id": player_id, "erased": True}
    return reply(body)
