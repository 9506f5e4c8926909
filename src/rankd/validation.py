"""Checks on what clients send: ids, runs, times, query values. Each failure names the field."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from rankd.boards import PLAYER_ID, RUN_ID, BoardConfig
from rankd.errors import InvalidRequest, ScoreOutOfRange
from rankd.periods import EPOCH, EPOCH_MS
from rankd.runs import Run

RUN_FIELDS = frozenset({"run_id", "player_id", "score", "ended_at"})


def player_id(value: str, field: str = "player_id") -> str:
    if not PLAYER_ID.match(value):
        raise InvalidRequest(f"{field} must match ^[A-Za-z0-9_-]{{1,64}}$")
    return value


def parse_time(value: Any, field: str) -> int:
    """RFC 3339 with an offset, to UTC milliseconds."""
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidRequest(f"{field} must be an RFC 3339 time such as 2026-11-03T18:22:07.123Z")
    try:
        parsed = datetime.fromisoformat(value.upper())  # RFC 3339 allows "t" and "z"
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in value.upper():
        raise InvalidRequest(
            f"{field} must be an RFC 3339 time with a UTC offset, such as 2026-11-03T18:22:07.123Z"
        )
    return int(parsed.timestamp() * 1000)


def format_time(ms: int) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. 2026-11-03T18:22:07.123Z."""
    return f"{_second(ms // 1000)}{ms % 1000:03d}Z"


@lru_cache(maxsize=65_536)
def _second(seconds: int) -> str:
    # responses repeat the same few seconds (a period start, recent runs): format each once
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def parse_run(payload: Any, board: BoardConfig, now_ms: int, max_skew_ms: int) -> Run:
    """A submitted run, checked against the board; raises InvalidRequest/ScoreOutOfRange."""
    if not isinstance(payload, dict):
        raise InvalidRequest("a run must be a JSON object")
    unknown = sorted(set(payload) - RUN_FIELDS)
    if unknown:
        raise InvalidRequest(
            f"unknown field {unknown[0]!r}; a run has run_id, player_id, score, ended_at"
        )
    run_id = payload.get("run_id")
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise InvalidRequest("run_id must be a string matching ^[A-Za-z0-9_.:-]{1,128}$")
    pid = payload.get("player_id")
    if not isinstance(pid, str):
        raise InvalidRequest("player_id must be a string matching ^[A-Za-z0-9_-]{1,64}$")
    player_id(pid)
    score = payload.get("score")
    if isinstance(score, float) and score >= 2**63:
        # integers past 64 bits reach us as floats; they are out of range, not malformed
        raise ScoreOutOfRange(f"score is above this board's max_run_score of {board.max_run_score}")
    if not isinstance(score, int) or isinstance(score, bool) or score < 0:
        raise InvalidRequest("score must be a non-negative integer")
    if score > board.max_run_score:
        raise ScoreOutOfRange(
            f"score {score} is above this board's max_run_score of {board.max_run_score}"
        )
    if payload.get("ended_at") is None:
        ended = now_ms
    else:
        ended = parse_time(payload["ended_at"], "ended_at")
        if ended < EPOCH_MS:
            raise InvalidRequest(f"ended_at must not be before {EPOCH.date().isoformat()}")
        if ended > now_ms + max_skew_ms:
            raise InvalidRequest(
                f"ended_at is more than {max_skew_ms // 1000} s in the future; check the clock"
            )
    return Run(run_id, pid, score, ended, now_ms)


def int_param(raw: str | None, field: str, default: int, low: int, high: int) -> int:
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high or not raw.strip().lstrip("-").isdigit():
        raise InvalidRequest(f"{field} must be an integer in {low}..{high}")
    return value
