"""Public reads: top, a player, around, friends, rank-of, periods."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd import cursors, results
from rankd.api.http import reply, runtime
from rankd.errors import BoardNotFound, Forbidden, InvalidRequest, PlayerNotRanked, Unauthorized
from rankd.formats import BOARD_ID_PATTERN, check_player_id, is_board_id
from rankd.periods import WINDOWS
from rankd.results import PlayerStanding
from rankd.runtime import Runtime
from rankd.services import entry_metadata
from rankd.services.scope import Scope, resolve_scope

router = APIRouter(tags=["reads"])

WindowQ = Annotated[str | None, Query(description="default: the board's first window")]
PeriodQ = Annotated[str | None, Query(description="default: the window's current period")]
SegmentQ = Annotated[
    str | None,
    Query(description="a segment's standings, <dimension>:<value> (default: the global ones)"),
]
ViewerQ = Annotated[
    str | None,
    Query(
        description="a player's own view (needs a server key): their entry where it would "
        "stand, even while held for review or banned"
    ),
]
IncludeQ = Annotated[
    Literal["metadata"] | None,
    Query(description="metadata: each entry also carries its run's metadata (null: none)"),
]
MAX_FRIENDS = 1000


@dataclass(slots=True)
class Where:
    """The query parameters every read takes: which standings (window, period, segment),
    and for the reads that take one, a viewer (a player's own view)."""

    window: str | None = None
    period: str | None = None
    segment: str | None = None
    viewer: str | None = None


# Dependencies as coroutines: FastAPI runs a plain callable (a class, say) in a thread pool,
# which cost a read more than its Redis round trip.
async def where(window: WindowQ = None, period: PeriodQ = None, segment: SegmentQ = None) -> Where:
    return Where(window, period, segment)


async def where_for(
    window: WindowQ = None,
    period: PeriodQ = None,
    segment: SegmentQ = None,
    viewer: ViewerQ = None,
) -> Where:
    return Where(window, period, segment, viewer)


async def open_read(
    request: Request, board_id: str, where: Where, player_id: str | None = None
) -> tuple[Runtime, Scope]:
    """What every read starts with: its ids checked, its board and period resolved. A
    player token reads as its player's own view (``where.viewer`` is set to it)."""
    rt = runtime(request)
    if "authorization" in request.headers:
        own_view(rt, request, where)
    elif where.viewer is not None:
        raise Unauthorized("viewer= needs a server key (or the player's own token)")
    if player_id is not None:
        check_player_id(player_id)
    board = await rt.boards.get(board_id)
    return rt, resolve_scope(board, where.window, where.period, where.segment)


def own_view(rt: Runtime, request: Request, where: Where) -> None:
    """Check a read's credentials: a player token (scope read) makes the read that player's
    own view; a server or admin key may ask for any player's with viewer=."""
    role, token = rt.auth.identify(request)
    if token is not None:
        token.require("read")
        if where.viewer is not None and where.viewer != token.player_id:
            raise Forbidden("a player token reads its own player's view only")
        where.viewer = token.player_id
    elif where.viewer is not None:
        # A player's own view may show what the public may not; only game servers ask for it.
        if role == "public":
            raise Unauthorized("viewer= needs a server key (or the player's own token)")
        check_player_id(where.viewer, "viewer")


CursorQ = Annotated[
    str | None,
    Query(
        description="the previous page's next_cursor: the entries after its last one, "
        "exact under concurrent writes at any depth (instead of offset)"
    ),
]


@router.get(
    "/v1/boards/{board_id}/top",
    response_model=results.TopPage,
    summary="The top list: n entries from offset (or after a cursor), best first",
)
async def top(
    board_id: str,
    request: Request,
    where: Annotated[Where, Depends(where_for)],
    n: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    cursor: CursorQ = None,
    include: IncludeQ = None,
) -> Response:
    decoded = None
    if cursor is not None:
        if offset:
            raise InvalidRequest("send cursor or offset, not both")
        decoded = cursors.decode(cursor, runtime(request).reader.cursor_key)
        # a cursor's period stays its own when the window rolls over between pages
        where.period = where.period or decoded.read.period
    rt, scope = await open_read(request, board_id, where)
    if decoded is not None:
        cursors.check_read(decoded, scope.cursor_read(where.viewer or ""))
    page = await rt.reader.top_page(scope, n, offset, where.viewer, decoded)
    if include:
        page = await entry_metadata.listed(rt.reader, scope, page, where.viewer)
    return reply(page)


@router.get(
    "/v1/boards/{board_id}/players/{player_id}",
    response_model=results.PlayerRank,
    summary="A player's entry, with total and percentile",
)
async def player(
    board_id: str,
    player_id: str,
    request: Request,
    where: Annotated[Where, Depends(where_for)],
    accuracy: Literal["exact", "approx"] = "exact",
    include: IncludeQ = None,
) -> Response:
    rt, scope = await open_read(request, board_id, where, player_id)
    # approx: estimated on a sharded board (approximate, error_bound); exact elsewhere
    approx = accuracy == "approx"
    found = await rt.reader.player(scope, player_id, where.viewer, approx=approx)
    if include:
        found = await entry_metadata.single(rt.reader, scope, found, where.viewer)
    return reply(found)


@router.get(
    "/v1/boards/{board_id}/players/{player_id}/around",
    response_model=results.Page,
    summary="The player and up to range entries either side",
)
async def around(
    board_id: str,
    player_id: str,
    request: Request,
    where: Annotated[Where, Depends(where_for)],
    range: Annotated[int, Query(ge=0, le=100)] = 5,
    include: IncludeQ = None,
) -> Response:
    rt, scope = await open_read(request, board_id, where, player_id)
    found = await rt.reader.around(scope, player_id, range, where.viewer)
    if include:
        found = await entry_metadata.listed(rt.reader, scope, found, where.viewer)
    return reply(found)


@router.get(
    "/v1/boards/{board_id}/players/{player_id}/friends",
    response_model=results.Friends,
    summary="The player and the listed friends that have entries, best first",
)
async def friends(
    board_id: str,
    player_id: str,
    request: Request,
    where: Annotated[Where, Depends(where_for)],
    ids: Annotated[str, Query(description="comma-separated player ids, up to 1000")] = "",
    include: IncludeQ = None,
) -> Response:
    friend_ids = [i for i in ids.split(",") if i] if ids else []
    if len(friend_ids) > MAX_FRIENDS:
        raise InvalidRequest(f"ids holds {len(friend_ids)} ids; at most {MAX_FRIENDS}")
    for fid in friend_ids:
        check_player_id(fid, "ids")
    rt, scope = await open_read(request, board_id, where, player_id)
    found = await rt.reader.friends(scope, player_id, friend_ids, where.viewer)
    if include:
        found = await entry_metadata.listed(rt.reader, scope, found, where.viewer)
    return reply(found)


@router.get(
    "/v1/boards/{board_id}/rank-of",
    response_model=results.RankOf,
    summary="The rank a run with this score would take now",
)
async def rank_of(
    board_id: str,
    request: Request,
    where: Annotated[Where, Depends(where)],
    score: Annotated[int, Query(ge=0)],
) -> Response:
    rt, scope = await open_read(request, board_id, where)
    return reply(await rt.reader.rank_of(scope, score))


@router.get(
    "/v1/boards/{board_id}/periods",
    response_model=results.Periods,
    summary="Periods with data, newest first: open, closed or archived",
)
async def periods(
    board_id: str, request: Request, window: WindowQ = None, segment: SegmentQ = None
) -> Response:
    rt, scope = await open_read(request, board_id, Where(window, None, segment))
    return reply(await rt.reader.periods(scope.board, scope.window))


@router.get(
    "/v1/boards/{board_id}/segments",
    response_model=results.Segments,
    summary="The segment values with public entries in a period, most entries first",
    description="At most 100 values per dimension; a value shows once the log consumer has "
    "applied its first run (within moments of the submit).",
)
async def segments(
    board_id: str, request: Request, window: WindowQ = None, period: PeriodQ = None
) -> Response:
    rt, scope = await open_read(request, board_id, Where(window, period))
    return reply(await rt.reader.segments(scope))


MAX_STANDING_BOARDS = 100


@router.get(
    "/v1/players/{player_id}/standings",
    response_model=results.PlayerStandings,
    summary="One player's standing on each of several boards (up to 100)",
    description="Boards where the player has no entry in the window's current period (or "
    "that lack the window) are left out; ids of boards that do not exist are listed in "
    "`unknown_boards`.",
)
async def standings(
    player_id: str,
    request: Request,
    boards: Annotated[str, Query(description="comma-separated board ids, up to 100")],
    window: WindowQ = None,
    viewer: ViewerQ = None,
) -> Response:
    board_ids = list(dict.fromkeys(b for b in boards.split(",") if b))
    if not board_ids or len(board_ids) > MAX_STANDING_BOARDS:
        raise InvalidRequest(f"boards must list 1..{MAX_STANDING_BOARDS} board ids")
    for board_id in board_ids:
        if not is_board_id(board_id):
            raise InvalidRequest(f"boards: each board id must match {BOARD_ID_PATTERN}")
    if window is not None and window not in WINDOWS:
        raise InvalidRequest(f"window must be one of {', '.join(WINDOWS)}")
    check_player_id(player_id)
    if "include" in request.query_params:  # a name other reads take: refused, not ignored
        raise InvalidRequest(
            "standings take no include=; a board's player read takes include=metadata"
        )
    rt = runtime(request)
    where = Where(window, viewer=viewer)
    if "authorization" in request.headers:
        own_view(rt, request, where)
    elif viewer is not None:
        raise Unauthorized("viewer= needs a server key (or the player's own token)")

    async def one(board_id: str) -> PlayerStanding | str | None:
        try:
            board = await rt.boards.get(board_id)
        except BoardNotFound:
            return board_id
        if window is not None and window not in board.windows:
            return None
        scope = resolve_scope(board, window, None)
        try:
            return await rt.reader.player(scope, player_id, where.viewer)
        except PlayerNotRanked:
            return None

    found = await asyncio.gather(*(one(b) for b in board_ids))
    answer: results.PlayerStandings = {
        "player_id": player_id,
        "standings": [
            {
                "board_id": s["board_id"],
                "window": s["window"],
                "period": s["period"],
                "rank": s["rank"],
                "score": s["score"],
                "achieved_at": s["achieved_at"],
                "total": s["total"],
            }
            for s in found
            if isinstance(s, dict)
        ],
        "unknown_boards": [b for b in found if isinstance(b, str)],
    }
    return reply(answer)
