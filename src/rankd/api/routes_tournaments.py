"""Joining a scheduled board's occurrence (CONTRACT v1.3; services/tournaments.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd import results
from rankd.api.http import reply, runtime
from rankd.errors import Forbidden, Unauthorized
from rankd.formats import check_player_id
from rankd.results import Joined

router = APIRouter(tags=["runs"])


@router.post(
    "/v1/boards/{board_id}/players/{player_id}/join",
    response_model=results.Joined,
    summary="Join a scheduled board's occurrence: the open one, or an upcoming one (period=)",
    description="A server key, or the player's own token with the join scope. Joining again "
    "is harmless. With `max_entrants` set, at most that many players are in an occurrence "
    "(409 `board_full`); no open occurrence (nor the named one open or upcoming): 409 "
    "`not_open`. On a board with `join_required`, only joined players' runs count there.",
)
async def join(
    board_id: str,
    player_id: str,
    request: Request,
    period: Annotated[
        str | None, Query(description="an open or upcoming occurrence (default: the open one)")
    ] = None,
) -> Response:
    rt = runtime(request)
    role, token = rt.auth.identify(request)
    if role == "public":
        raise Unauthorized("joining needs a server key or the player's own token")
    check_player_id(player_id)
    if token is not None:
        token.require("join")
        if token.player_id != player_id:
            raise Forbidden("a player token joins its own player only")
    board = await rt.boards.get(board_id)
    tournaments = rt.submitter.tournaments
    assert tournaments is not None
    joined = await tournaments.join(board, player_id, period)
    body: Joined = {"player_id": player_id, "period": joined.id, "joined": True}
    return reply(body)
