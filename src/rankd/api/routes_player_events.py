"""A player's own event stream (v1.3): their rank changes and the friends who pass them, as
Server-Sent Events (services/player_streams.py feeds them)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import orjson
from fastapi import APIRouter, Query
from sse_starlette import ServerSentEvent
from starlette.requests import Request

from rankd.api.http import runtime
from rankd.api.routes_live import LiveResponse
from rankd.errors import Forbidden, InvalidRequest, Unauthorized
from rankd.formats import BOARD_ID_PATTERN, check_player_id, is_board_id
from rankd.services.player_streams import MAX_BOARDS, MAX_FRIENDS, PlayerStream

router = APIRouter(tags=["live"])

_DESCRIPTION = f"""A Server-Sent Events stream of one player's changes on up to {MAX_BOARDS}
boards (each board window's current period, global standings): a `standing` event
(`{{"board_id", "window", "period", "rank", "previous_rank"}}`) on connect for each window
where the player has an entry and whenever their rank changes, at most one a second per
board and window; a `passed` event (`{{"board_id", "window", "period", "player_id",
"rank", "your_rank"}}`) when one of `friends` (up to {MAX_FRIENDS}) overtakes them; a
heartbeat comment every 15 s. Needs a server key, or the player's own token (scope
`read`). A banned player's stream shows their own view, like their reads. A client that
does not keep up is disconnected; reconnecting sends the state again."""


def _ids(raw: str, name: str, limit: int) -> list[str]:
    found = list(dict.fromkeys(i for i in raw.split(",") if i)) if raw else []
    if len(found) > limit:
        raise InvalidRequest(f"{name} lists {len(found)} ids; at most {limit}")
    return found


@router.get(
    "/v1/players/{player_id}/events",
    response_class=LiveResponse,
    status_code=200,
    responses={
        200: {
            "content": {
                "text/event-stream": {
                    "schema": {"type": "string"},
                    "example": 'event: standing\ndata: {"board_id": "arena", "window": "weekly",'
                    ' "period": "2026-W45", "rank": 12, "previous_rank": 15}\n\n'
                    'event: passed\ndata: {"board_id": "arena", "window": "weekly", '
                    '"period": "2026-W45", "player_id": "77", "rank": 11, "your_rank": 12}\n\n',
                }
            }
        }
    },
    summary="A player's own live events: rank changes, friends passing (Server-Sent Events)",
    description=_DESCRIPTION,
)
async def player_events(
    player_id: str,
    request: Request,
    boards: Annotated[str, Query(description=f"comma-separated board ids, 1..{MAX_BOARDS}")],
    friends: Annotated[
        str, Query(description=f"comma-separated player ids, 0..{MAX_FRIENDS}")
    ] = "",
) -> LiveResponse:
    rt = runtime(request)
    role, token = rt.auth.identify(request)
    if role == "public":
        raise Unauthorized("a player's events need a server key or the player's own token")
    if token is not None:
        token.require("read")
        if token.player_id != player_id:
            raise Forbidden("a player token follows its own player's events only")
    check_player_id(player_id)
    board_ids = _ids(boards, "boards", MAX_BOARDS)
    if not board_ids:
        raise InvalidRequest("boards must list at least one board id")
    for board_id in board_ids:
        if not is_board_id(board_id):
            raise InvalidRequest(f"boards: each board id must match {BOARD_ID_PATTERN}")
    friend_ids = [f for f in _ids(friends, "friends", MAX_FRIENDS) if f != player_id]
    for friend in friend_ids:
        check_player_id(friend, "friends")
    for board_id in board_ids:
        await rt.boards.get(board_id)  # 404 board_not_found before any stream
    stream = rt.players_live.open(player_id, board_ids, friend_ids)
    rt.live.listening()

    async def frames(live: PlayerStream) -> AsyncIterator[ServerSentEvent]:
        while (event := await live.queue.get()) is not None:
            kind, data = event
            yield ServerSentEvent(data=orjson.dumps(data).decode(), event=kind)

    settings = rt.settings
    return LiveResponse(
        frames(stream),
        lambda: rt.players_live.close(stream),
        ping=settings.live_heartbeat_s,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=settings.live_send_timeout_s,
        headers={"Cache-Control": "no-store"},
    )
