"""Public reads: top, a player, around, friends, rank-of, periods."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd.api import schemas
from rankd.api.http import reply, runtime
from rankd.errors import InvalidRequest
from rankd.services.reads import Scope, resolve_scope
from rankd.validation import player_id as check_player_id

router = APIRouter(tags=["reads"])

WindowQ = Annotated[str | None, Query(description="default: the board's first window")]
PeriodQ = Annotated[str | None, Query(description="default: the window's current period")]
ViewerQ = Annotated[
    str | None, Query(description="with a server key: read as this player's own view")
]
MAX_FRIENDS = 1000


async def _scope(
    request: Request, board_id: str, window: str | None, period: str | None, viewer: str | None
) -> Scope:
    rt = runtime(request)
    if viewer is not None:
        # A player's own view may show what the public may not; only game servers ask for it.
        rt.auth.require(request, "server")
        check_player_id(viewer, "viewer")
    board = await rt.boards.get(board_id)
    return resolve_scope(board, window, period)


@router.get("/v1/boards/{board_id}/top", response_model=schemas.TopOut, responses=schemas.ERRORS)
async def top(
    board_id: str,
    request: Request,
    n: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    window: WindowQ = None,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
) -> Response:
    scope = await _scope(request, board_id, window, period, viewer)
    return reply(await runtime(request).reader.top(scope, n, offset))


@router.get(
    "/v1/boards/{board_id}/players/{player_id}",
    response_model=schemas.PlayerOut,
    responses=schemas.ERRORS,
)
async def player(
    board_id: str,
    player_id: str,
    request: Request,
    accuracy: Literal["exact", "approx"] = "exact",
    window: WindowQ = None,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
) -> Response:
    check_player_id(player_id)
    scope = await _scope(request, board_id, window, period, viewer)
    # One key per period: the exact rank is as cheap as any estimate, so both are exact.
    del accuracy
    return reply(await runtime(request).reader.player(scope, player_id))


@router.get(
    "/v1/boards/{board_id}/players/{player_id}/around",
    response_model=schemas.AroundOut,
    responses=schemas.ERRORS,
)
async def around(
    board_id: str,
    player_id: str,
    request: Request,
    range: Annotated[int, Query(ge=0, le=100)] = 5,
    window: WindowQ = None,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
) -> Response:
    check_player_id(player_id)
    scope = await _scope(request, board_id, window, period, viewer)
    return reply(await runtime(request).reader.around(scope, player_id, range))


@router.get(
    "/v1/boards/{board_id}/players/{player_id}/friends",
    response_model=schemas.FriendsOut,
    responses=schemas.ERRORS,
)
async def friends(
    board_id: str,
    player_id: str,
    request: Request,
    ids: Annotated[str, Query(description="comma-separated player ids, up to 1000")] = "",
    window: WindowQ = None,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
) -> Response:
    check_player_id(player_id)
    friend_ids = [i for i in ids.split(",") if i] if ids else []
    if len(friend_ids) > MAX_FRIENDS:
        raise InvalidRequest(f"ids holds {len(friend_ids)} ids; at most {MAX_FRIENDS}")
    for fid in friend_ids:
        check_player_id(fid, "ids")
    scope = await _scope(request, board_id, window, period, viewer)
    return reply(await runtime(request).reader.friends(scope, player_id, friend_ids))


@router.get(
    "/v1/boards/{board_id}/rank-of", response_model=schemas.RankOfOut, responses=schemas.ERRORS
)
async def rank_of(
    board_id: str,
    request: Request,
    score: Annotated[int, Query(ge=0)],
    window: WindowQ = None,
    period: PeriodQ = None,
) -> Response:
    scope = await _scope(request, board_id, window, period, None)
    return reply(await runtime(request).reader.rank_of(scope, score))


@router.get(
    "/v1/boards/{board_id}/periods", response_model=schemas.PeriodsOut, responses=schemas.ERRORS
)
async def periods(board_id: str, request: Request, window: WindowQ = None) -> Response:
    scope = await _scope(request, board_id, window, None, None)
    return reply(await runtime(request).reader.periods(scope.board, scope.window))
