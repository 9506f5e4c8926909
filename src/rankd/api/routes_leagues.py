"""League reads (CONTRACT v1.3 "Leagues"; services/leagues.py): a player's cohort, a cohort
by id, a player's tier and history."""

from __future__ import annotations

from typing import Annotated, Any, cast

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd import results_leagues
from rankd.api.http import reply, runtime
from rankd.api.routes_reads import IncludeQ, PeriodQ, ViewerQ, Where, open_read, own_view
from rankd.errors import InvalidRequest, PlayerNotRanked, Unauthorized
from rankd.formats import check_board_id, check_player_id, format_time
from rankd.leagues import League
from rankd.results_leagues import Cohort
from rankd.runtime import Runtime
from rankd.services import entry_metadata
from rankd.services.leagues import Leagues, league_of
from rankd.services.scope import Scope

router = APIRouter(tags=["reads"])


def _leagues(rt: Runtime) -> Leagues:
    leagues = rt.submitter.leagues
    assert leagues is not None
    return leagues


async def _open(
    request: Request, board_id: str, period: str | None, viewer: str | None, player: str | None
) -> tuple[Runtime, Scope, League, str | None]:
    """What a league read starts with: the board's league window's period, and the own view
    the read is made as (a player token's player, or viewer=)."""
    rt = runtime(request)
    league = league_of(await rt.boards.get(board_id))
    for name in ("window", "segment"):  # names other reads take: refused, not ignored
        if name in request.query_params:
            raise InvalidRequest(
                f"league reads take no {name}= (a cohort is of the league's {league.window}"
                " window, across segments)"
            )
    where = Where(league.window, period, None, viewer)
    rt, scope = await open_read(request, board_id, where, player)
    return rt, scope, league, where.viewer


async def _cohort(
    rt: Runtime,
    scope: Scope,
    league: League,
    by: tuple[str, ...],
    viewer: str | None,
    include: str | None,
) -> Cohort | None:
    """The cohort ``by`` names, ranked among its members with each entry's zone; None when
    the player is not placed."""
    found = await _leagues(rt).read(rt.reader, scope, by, viewer)
    if found is None:
        return None
    tier, number, shown = found
    if include and shown:
        ranked = await entry_metadata.listed(rt.reader, scope, {"entries": shown}, viewer)
        shown = ranked["entries"]
    entries: list[dict[str, Any]] = []
    for found_entry in shown:
        rank = found_entry["position"]
        rest = {k: v for k, v in found_entry.items() if k not in ("position", "rank")}
        zone = league.zone(tier, rank, len(shown))
        entries.append({"rank": rank, **rest, "zone": zone})
    body = {
        **scope.head,
        "tier": league.tiers[tier],
        "cohort": league.cohort_id(tier, number),
        "ends_at": format_time(scope.period.end_ms),
        "entries": entries,
    }
    return cast(Cohort, body)


@router.get(
    "/v1/boards/{board_id}/players/{player_id}/league",
    response_model=results_leagues.Cohort,
    summary="The player's league cohort in a period, ranked within it, with each entry's zone",
    description="404 `player_not_ranked` before the player's first counted run of the period "
    "(and while they wait for their tier: until the previous period's moves are made).",
)
async def league(
    board_id: str,
    player_id: str,
    request: Request,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
    include: IncludeQ = None,
) -> Response:
    rt, scope, league, viewer = await _open(request, board_id, period, viewer, player_id)
    body = await _cohort(rt, scope, league, ("player", player_id), viewer, include)
    if body is None and await _leagues(rt).keys.is_waiting(board_id, scope.period.id, player_id):
        raise PlayerNotRanked(
            f"player {player_id!r} waits for their tier in {scope.window} period"
            f" {scope.period.id}: they are placed once the period before it is frozen"
        )
    if body is None or not any(e["player_id"] == player_id for e in body["entries"]):
        raise scope.not_ranked(player_id)  # placed, but no entry this view shows
    return reply(body)


@router.get(
    "/v1/boards/{board_id}/cohorts/{cohort}",
    response_model=results_leagues.Cohort,
    summary="One league cohort in a period, ranked within it, with each entry's zone",
)
async def cohort(
    board_id: str,
    cohort: str,
    request: Request,
    period: PeriodQ = None,
    viewer: ViewerQ = None,
    include: IncludeQ = None,
) -> Response:
    rt, scope, league, viewer = await _open(request, board_id, period, viewer, None)
    tier, number = league.parse_cohort_id(cohort)
    body = await _cohort(rt, scope, league, ("cohort", str(tier), str(number)), viewer, include)
    assert body is not None  # a cohort named by id always answers, empty or not
    return reply(body)


@router.get(
    "/v1/players/{player_id}/leagues",
    response_model=results_leagues.LeagueHistory,
    summary="A player's tier on a league board and what each frozen period did to it",
)
async def leagues(
    player_id: str,
    request: Request,
    board: Annotated[str | None, Query(description="the league board")] = None,
    viewer: ViewerQ = None,
) -> Response:
    rt = runtime(request)
    where = Where(viewer=viewer)
    role = "public"
    if "authorization" in request.headers:
        role, _ = rt.auth.identify(request)  # a bad key or token is 401, never ignored
        own_view(rt, request, where)
    elif viewer is not None:
        raise Unauthorized("viewer= needs a server key (or the player's own token)")
    check_player_id(player_id)
    if board is None:
        raise InvalidRequest("board= is required: the league board to read")
    check_board_id(board)
    config = await rt.boards.get(board)
    leagues = _leagues(rt)
    if player_id in rt.moderation.bans and role != "admin" and where.viewer != player_id:
        # shadow-banned: the public sees what it sees of a player never seen (their own
        # view and an admin see the truth)
        return reply(leagues.unseen(config, player_id))
    return reply(await leagues.history(config, player_id))
