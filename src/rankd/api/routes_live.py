"""Live updates: the top list as Server-Sent Events (services/live.py feeds them)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from rankd import metrics
from rankd.api.rate_limit import client_address
from rankd.api.routes_reads import Where, open_read
from rankd.api.routes_reads import where as where_params
from rankd.errors import RankdError
from rankd.results import Top
from rankd.services.live import Stream, top_events
from rankd.services.scope import resolve_scope

router = APIRouter(tags=["live"])
logger = logging.getLogger("rankd.live")

_DESCRIPTION = """A Server-Sent Events stream of the top list: a `top` event (data: the same
JSON as `GET /top`) on connect and whenever the list changes, at most 10 per second, the
latest state always delivered; a heartbeat comment (`: heartbeat`) every 15 s
(`RANKD_LIVE_HEARTBEAT_S`). Without `period` the stream follows the current period. A
client that does not read fast enough is disconnected. If the board's config stops
allowing the stream (its window removed) an `error` event with the error body ends it.
Errors before the stream starts are the usual JSON errors; 429 `rate_limited` when the
client's address already holds `RANKD_LIVE_MAX_STREAMS_PER_ADDRESS` streams (20); 503
`unavailable` when this instance already serves `RANKD_LIVE_MAX_STREAMS` streams."""


class LiveResponse(EventSourceResponse):
    """An event stream that releases its hub slot however it ends, and drops a client
    whose sends stop completing (its socket buffer full) instead of buffering for it."""

    def __init__(
        self, content: AsyncIterator[ServerSentEvent], release: Callable[[], None], **kw: Any
    ) -> None:
        super().__init__(content, **kw)
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        # except*: when the heartbeat's send times out beside an event's, both come as one
        # group from sse-starlette's task group; a bare `except` would miss the drop
        except* SendTimeoutError:
            metrics.LIVE_DROPPED.inc()
            logger.info("dropped a live stream whose client stopped reading")
        finally:
            self.release()


@router.get(
    "/v1/boards/{board_id}/events",
    response_class=LiveResponse,
    status_code=200,
    responses={
        200: {
            "content": {
                "text/event-stream": {
                    "schema": {"type": "string"},
                    "example": 'event: top\ndata: {"board_id": "arena", "window": "weekly", '
                    '"period": "2026-W45", "total": 1, "entries": [{"rank": 1, "player_id": '
                    '"48213377", "score": 1284500, "achieved_at": "2026-11-03T18:22:07.123Z", '
                    '"name": "kai_runs"}]}\n\n: heartbeat\n\n',
                }
            }
        }
    },
    summary="Live top list (Server-Sent Events)",
    description=_DESCRIPTION,
)
async def events(
    board_id: str,
    request: Request,
    where: Annotated[Where, Depends(where_params)],
    n: Annotated[int, Query(ge=1, le=1000)] = 10,
) -> LiveResponse:
    rt, scope = await open_read(request, board_id, where)  # 404 / 400 before any stream
    address = client_address(request.scope, rt.settings.rate_trusted_proxies)
    stream = rt.live.open_stream(
        board_id, scope.window, scope.segment, (where.period, n), address=address
    )

    async def read(max_age_s: float | None) -> tuple[Top, float | None]:
        # the config is read again each time: a stream sees a changed board as reads do
        board = await rt.boards.get(board_id)
        now = resolve_scope(board, where.window, where.period, where.segment)
        top = await rt.reader.top(now, n, 0, max_age_s=max_age_s)
        if where.period is not None:
            return top, None
        # following the current period: look again when it ends
        return top, max(0.0, now.period.end_ms / 1000 - time.time())

    async def frames(live: Stream) -> AsyncIterator[ServerSentEvent]:
        try:
            async for body in top_events(live, read):
                yield ServerSentEvent(data=body.decode(), event="top")
        except RankdError as exc:
            error = {"error": {"code": exc.code, "message": exc.message}}
            yield ServerSentEvent(data=orjson.dumps(error).decode(), event="error")

    settings = rt.settings
    return LiveResponse(
        frames(stream),
        lambda: rt.live.close_stream(stream),
        ping=settings.live_heartbeat_s,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=settings.live_send_timeout_s,
        headers={"Cache-Control": "no-store"},
    )
