"""Moderation (admin): shadow bans, the review holds of a board, removing one entry."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd import results_admin
from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.errors import InvalidRequest
from rankd.formats import check_player_id, check_run_id, format_time
from rankd.results import MAX_BAN_REASON
from rankd.results_admin import Ban, Bans, EntryRemoved, HoldDecision, Holds
from rankd.stores import moderation as db

router = APIRouter(tags=["moderation"])


async def _ban(request: Request, player_id: str, banned: bool) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    check_player_id(player_id)
    reason = await _reason(request) if banned else None
    await rt.moderation.ban(player_id, banned, reason)
    body: Ban = {"player_id": player_id, "banned": banned}
    return reply(body)


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return length != "0" if length is not None else "transfer-encoding" in request.headers


async def _reason(request: Request) -> str | None:
    """A ban's optional ``{"reason": "..."}``; no body at all is a ban without one."""
    if not _has_body(request):
        return None
    body = await read_json(request)
    if not isinstance(body, dict) or set(body) - {"reason"}:
        raise InvalidRequest('the body must be {"reason": "..."}, or none')
    reason = body.get("reason")
    if reason is None:
        return None
    if (
        not isinstance(reason, str)
        or not reason.strip()
        or len(reason) > MAX_BAN_REASON
        or not reason.isprintable()
    ):
        raise InvalidRequest(f"reason must be 1..{MAX_BAN_REASON} printable characters")
    return reason


@router.post(
    "/v1/players/{player_id}/ban",
    response_model=results_admin.Ban,
    openapi_extra=schemas.body_schema(
        results_admin.BanRequest, schemas.BAN_IN_EXAMPLE, required=False
    ),
    summary="Shadow-ban a player on every board (admin)",
    description="An optional body records why (`reason`), for moderators: `GET /v1/bans` "
    "shows it; the player and server keys never see it. Banning again replaces it.",
)
async def ban(player_id: str, request: Request) -> Response:
    return await _ban(request, player_id, True)


@router.delete(
    "/v1/players/{player_id}/ban",
    response_model=results_admin.Ban,
    summary="Lift a player's ban, with every run they made while banned (admin)",
)
async def unban(player_id: str, request: Request) -> Response:
    return await _ban(request, player_id, False)


_CURSOR = re.compile(r"[1-9][0-9]{0,17}")


def _cursor(after: str | None) -> int | None:
    """``after`` is the ``next`` of the previous page: a ban sequence number, in decimal."""
    if after is None:
        return None
    if not _CURSOR.fullmatch(after):
        raise InvalidRequest("after must be the next value of a previous page of bans")
    return int(after)


@router.get(
    "/v1/bans",
    response_model=results_admin.Bans,
    summary="Players banned now, newest ban first, a page at a time (admin)",
    description="Pages: pass the answer's `next` as `after` for the next page; `next` is "
    "null on the last one. A player unbanned meanwhile leaves the list; one banned "
    "meanwhile appears on the first page.",
)
async def bans(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[
        str | None, Query(description="the `next` of the previous page (an opaque cursor)")
    ] = None,
) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    rows = await db.list_bans(rt.pg, limit, _cursor(after))
    body: Bans = {
        "bans": [
            {"player_id": player_id, "banned_at": format_time(at_ms), "reason": reason}
            for player_id, at_ms, _, reason in rows
        ],
        "next": str(rows[-1][2]) if len(rows) == limit else None,
    }
    return reply(body)


@router.get(
    "/v1/boards/{board_id}/holds",
    response_model=results_admin.Holds,
    summary="Runs held for review, oldest first (admin)",
)
async def holds(
    board_id: str,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    board = await rt.boards.get(board_id)
    body: Holds = {
        "board_id": board.board_id,
        "holds": [
            {
                "run_id": h.run_id,
                "player_id": h.player_id,
                "score": h.score,
                "window": h.window,
                "period": h.period,
                "ended_at": format_time(h.ended_ms),
            }
            for h in await rt.moderation.list_holds(board, limit)
        ],
    }
    return reply(body)


async def _decide(request: Request, board_id: str, run_id: str, approve: bool) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    check_run_id(run_id)
    board = await rt.boards.get(board_id)
    await rt.moderation.decide(board, run_id, approve)
    body: HoldDecision = {
        "board_id": board.board_id,
        "run_id": run_id,
        "decision": "approved" if approve else "rejected",
    }
    return reply(body)


@router.post(
    "/v1/boards/{board_id}/holds/{run_id}/approve",
    response_model=results_admin.HoldDecision,
    summary="Publish a held run (admin)",
)
async def approve(board_id: str, run_id: str, request: Request) -> Response:
    return await _decide(request, board_id, run_id, True)


@router.post(
    "/v1/boards/{board_id}/holds/{run_id}/reject",
    response_model=results_admin.HoldDecision,
    summary="Discard a held run (admin)",
)
async def reject(board_id: str, run_id: str, request: Request) -> Response:
    return await _decide(request, board_id, run_id, False)


@router.delete(
    "/v1/boards/{board_id}/entries/{player_id}",
    response_model=results_admin.EntryRemoved,
    summary="Remove one player's entry from one period: a correction (admin)",
    description="The player's runs that ended by now no longer count in that period (not "
    "after a replay or a rebuild either); later runs count again. `window`: the board's "
    "default window when absent; `period`: the window's current one when absent.",
)
async def delete_entry(
    board_id: str,
    player_id: str,
    request: Request,
    window: Annotated[str | None, Query(description="the window (default: the first)")] = None,
    period: Annotated[str | None, Query(description="the period id (default: the current)")] = None,
) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    check_player_id(player_id)
    corrections = rt.deletions.corrections
    window, period = await corrections.remove_entry(board_id, player_id, window, period)
    body: EntryRemoved = {
        "board_id": board_id,
        "player_id": player_id,
        "window": window,
        "period": period,
        "removed": True,
    }
    return reply(body)
