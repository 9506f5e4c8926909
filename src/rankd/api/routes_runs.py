"""Run submission: single and batch."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd import metrics, results
from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.boards import BoardConfig
from rankd.errors import Forbidden, InvalidRequest, RankdError, Unauthorized
from rankd.formats import clip, is_run_id
from rankd.results import MAX_BATCH
from rankd.runs import Run
from rankd.runtime import Runtime
from rankd.services.rate_limits import key_identity
from rankd.tokens import PlayerToken
from rankd.validation import parse_run

router = APIRouter(tags=["runs"])


async def _count_runs(rt: Runtime, request: Request, runs: int) -> None:
    """Count a submit's runs against its key's run rate (a batch of N is N runs)."""
    key = rt.auth.valid_key(request.headers.get("authorization"))
    if key is None:
        return
    rate = rt.limiter.rates["runs"]
    if rate.per_s > 0 and runs > rate.burst:
        # it could never pass, and counting it as the burst would let batches exceed the rate
        raise InvalidRequest(
            f"runs holds {runs} runs; this service takes at most {rate.burst} at once"
            " per key (RANKD_RATE_KEY_RUNS_BURST): send smaller batches"
        )
    await rt.limiter.check("runs", "r" + key_identity(key)[1:], runs)


def _sender(rt: Runtime, request: Request) -> PlayerToken | None:
    """A server (or admin) key, or a player token with the submit scope (returned)."""
    role, token = rt.auth.identify(request)
    if role == "public":
        raise Unauthorized("this endpoint needs a server key: Authorization: Bearer <key>")
    if token is not None:
        token.require("submit")
    return token


async def _client_run(rt: Runtime, board: BoardConfig, token: PlayerToken, run: Run) -> None:
    """What a game client's own run must pass besides a server's checks: the board takes
    client runs, the run is the token's player's, and that player's run rate."""
    if not board.client_submits:
        raise Forbidden(
            f"board {board.board_id!r} takes runs from game servers only (client_submits is false)"
        )
    if run.player_id != token.player_id:
        raise Forbidden("a player token submits its own player's runs only")
    await rt.limiter.check("player_runs", "p:" + token.player_id)


@router.post(
    "/v1/boards/{board_id}/runs",
    response_model=results.SubmitResult,
    openapi_extra=schemas.body_schema(results.Run, schemas.RUN_IN_EXAMPLE),
    summary="Submit one finished run (server)",
)
async def submit_run(board_id: str, request: Request) -> Response:
    rt = runtime(request)
    token = _sender(rt, request)
    await _count_runs(rt, request, 1)
    board = await rt.boards.get(board_id)
    body = await read_json(request)
    now_ms = int(time.time() * 1000)
    run = parse_run(body, board, now_ms, rt.settings.max_future_skew_s * 1000)
    if token is not None:
        await _client_run(rt, board, token, run)
    [standings] = await rt.submitter.submit(board, [run])
    if isinstance(standings, RankdError):
        raise standings
    metrics.RUNS_ACCEPTED.labels("single").inc()
    return reply(
        {
            "run_id": run.run_id,
            "player_id": run.player_id,
            "score": run.score,
            "standings": standings,
        }
    )


@router.post(
    "/v1/boards/{board_id}/runs:batch",
    response_model=results.BatchResults,
    openapi_extra=schemas.body_schema(results.Batch, schemas.BATCH_IN_EXAMPLE),
    summary="Submit up to 1000 runs (server); one bad run does not fail the others",
)
async def submit_batch(board_id: str, request: Request) -> Response:
    rt = runtime(request)
    if _sender(rt, request) is not None:
        raise Forbidden("a player token submits one run at a time: POST .../runs")
    board = await rt.boards.get(board_id)
    body = await read_json(request)
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("runs"), list)
        or set(body) != {"runs"}
    ):
        raise InvalidRequest('the body must be {"runs": [run, ...]}')
    payloads: list[Any] = body["runs"]
    if len(payloads) > MAX_BATCH:
        raise InvalidRequest(f"runs holds {len(payloads)} runs; at most {MAX_BATCH} per batch")
    await _count_runs(rt, request, max(1, len(payloads)))
    now_ms = int(time.time() * 1000)
    skew_ms = rt.settings.max_future_skew_s * 1000
    results: list[dict[str, Any]] = []
    valid: list[tuple[int, Run]] = []
    for payload in payloads:
        try:
            run = parse_run(payload, board, now_ms, skew_ms)
        except RankdError as exc:
            run_id = payload.get("run_id") if isinstance(payload, dict) else None
            if isinstance(run_id, str) and not is_run_id(run_id):
                run_id = clip(run_id)  # not a run id: echoed as errors echo, cut short
            results.append(
                {
                    "run_id": run_id if isinstance(run_id, str) else None,
                    "error": {"code": exc.code, "message": exc.message},
                }
            )
            continue
        valid.append((len(results), run))
        results.append({"run_id": run.run_id})
    standings = await rt.submitter.submit(board, [run for _, run in valid])
    accepted = 0
    for (index, _), outcome in zip(valid, standings, strict=True):
        if isinstance(outcome, RankdError):
            results[index]["error"] = {"code": outcome.code, "message": outcome.message}
        else:
            results[index]["standings"] = outcome
            accepted += 1
    metrics.RUNS_ACCEPTED.labels("batch").inc(accepted)
    return reply({"results": results})
