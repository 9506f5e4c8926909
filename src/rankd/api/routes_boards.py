"""Board configuration endpoints."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from rankd import results, results_admin
from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound, InvalidRequest
from rankd.formats import clip, format_time, is_board_id
from rankd.periods import Period
from rankd.results import Occurrence
from rankd.results_admin import BoardDeleted, Deliveries, PeriodClosed
from rankd.stores import deliveries

router = APIRouter(tags=["boards"])


def board_out(config: BoardConfig, *, admin: bool = False) -> dict[str, Any]:
    """A board's config as the API shows it; its hooks' URLs to an admin only."""
    created = config.created_at
    settings = config.settings()
    if not admin:
        del settings["hooks"]
    if config.schedule is None:
        del settings["schedule"]
    else:
        now_ms = int(time.time() * 1000)
        settings["current_period"] = _occurrence(config.schedule.occurrence_at(now_ms))
        settings["next_period"] = _occurrence(config.schedule.next_after(now_ms))
    if config.reshard is not None:
        settings["resharding"] = config.reshard.progress()
    return {
        "board_id": config.board_id,
        **settings,
        "created_at": format_time(int(created.timestamp() * 1000)) if created else None,
        "tie_resolution_ms": config.tie_resolution_ms(),
    }


def _occurrence(period: Period | None) -> Occurrence | None:
    if period is None:
        return None
    return {
        "period": period.id,
        "starts_at": format_time(period.start_ms),
        "ends_at": format_time(period.end_ms),
    }


def _is_admin(request: Request) -> bool:
    """An admin asking (the board list asks no credentials: a wrong key is just no admin)."""
    return runtime(request).auth.admin_header(request.headers.get("authorization"))


@router.put(
    "/v1/boards/{board_id}",
    response_model=results.Board,
    openapi_extra=schemas.body_schema(results.BoardSettings, schemas.BOARD_IN_EXAMPLE),
    summary="Create or update a board (admin); omitted fields keep their value",
)
async def put_board(board_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    body = await read_json(request)
    hooks = body.get("hooks") if isinstance(body, dict) else None
    if isinstance(hooks, dict) and any(hooks.values()) and not rt.settings.webhook_secret:
        raise InvalidRequest(
            "hooks need RANKD_WEBHOOK_SECRET set on the service (it signs every delivery)"
        )
    config, created = await rt.boards.put(board_id, body)
    return reply(board_out(config, admin=True), 201 if created else 200)


@router.get("/v1/boards", response_model=results.Boards, summary="List boards")
async def list_boards(
    request: Request,
    active: Annotated[
        bool, Query(description="true: only boards with a scheduled occurrence open now")
    ] = False,
) -> Response:
    boards = await runtime(request).boards.list()
    if active:
        now_ms = int(time.time() * 1000)
        boards = [b for b in boards if b.schedule and b.schedule.occurrence_at(now_ms)]
    admin = _is_admin(request)
    return reply({"boards": [board_out(b, admin=admin) for b in boards]})


@router.get(
    "/v1/boards/{board_id}",
    response_model=results.Board,
    summary="One board's config",
)
async def get_board(board_id: str, request: Request) -> Response:
    if not is_board_id(board_id):
        raise BoardNotFound(f"board {clip(board_id)!r} does not exist")
    board = await runtime(request).boards.get(board_id)
    return reply(board_out(board, admin=_is_admin(request)))


@router.delete(
    "/v1/boards/{board_id}",
    response_model=results_admin.BoardDeleted,
    summary="Delete a board with its standings, archive and holds (admin)",
    description="Every read of the board answers 404 `board_not_found` at once (other "
    "instances within `RANKD_CONFIG_CACHE_TTL_S`), its runs are refused, and no rebuild or "
    "replay brings it back. The id can be used for a new, empty board a few seconds later "
    "(until its keys are removed, creating it answers 503 `unavailable`).",
)
async def delete_board(board_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    await rt.deletions.delete_board(board_id)
    body: BoardDeleted = {"board_id": board_id, "deleted": True}
    return reply(body)


@router.post(
    "/v1/boards/{board_id}/periods/{period}/close",
    response_model=results_admin.PeriodClosed,
    summary="Close an open period now (admin): it freezes and archives as if it had ended",
    description="Answered once the period is closed on every instance (a few seconds); "
    "from then on runs into it answer `closed`, reads stay as they were, and the season job "
    "freezes it. Closing it again is harmless. `window`: the board's first when absent.",
)
async def close_period(
    board_id: str,
    period: str,
    request: Request,
    window: Annotated[str | None, Query(description="the window (default: the first)")] = None,
) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    config = await rt.boards.get(board_id)
    window = config.default_window if window is None else window
    closed_ms = await rt.deletions.corrections.close_period(board_id, window, period)
    body: PeriodClosed = {
        "board_id": board_id,
        "window": window,
        "period": period,
        "status": "closed",
        "closed_at": format_time(closed_ms),
    }
    return reply(body)


@router.get(
    "/v1/boards/{board_id}/deliveries",
    response_model=results_admin.Deliveries,
    summary="The board's webhook deliveries, newest first (admin)",
    description="One per frozen period while the board has `hooks.period_closed`: attempts,"
    " the receiver's last answer, and whether it is `pending` (retried with backoff),"
    " `delivered` (a 2xx) or `failed` (no 2xx for three days).",
)
async def list_deliveries(
    board_id: str,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "admin")
    board = await rt.boards.get(board_id)
    body: Deliveries = {
        "board_id": board.board_id,
        "deliveries": [
            {
                "delivery_id": d.delivery_id,
                "event": "period_closed",
                "url": d.url,
                "status": d.status,  # type: ignore[typeddict-item]
                "attempts": d.attempts,
                "created_at": format_time(d.created_ms),
                "next_attempt_at": format_time(d.next_ms) if d.status == "pending" else None,
                "last_status": d.last_status,
                "last_error": d.last_error,
                "done_at": None if d.done_ms is None else format_time(d.done_ms),
            }
            for d in await deliveries.listed(rt.pg, board.board_id, limit)
        ],
    }
    return reply(body)
