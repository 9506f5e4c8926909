"""Checks on a submitted run. Each failure names the field; ids and times: formats.py."""

from __future__ import annotations

from typing import Any

import orjson

from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest, ScoreOutOfRange
from rankd.formats import (
    RUN_ID_PATTERN,
    check_player_id,
    check_segments,
    clip,
    is_run_id,
    parse_time,
)
from rankd.periods import EPOCH, EPOCH_MS
from rankd.runs import Run

RUN_FIELDS = frozenset({"run_id", "player_id", "score", "ended_at", "segments", "metadata"})
# CONTRACT v1.3: a run's metadata is an object of at most 16 keys and 1,024 bytes encoded
METADATA_MAX_KEYS = 16
METADATA_MAX_BYTES = 1024


def parse_run(payload: Any, board: BoardConfig, now_ms: int, max_skew_ms: int) -> Run:
    """A submitted run, checked against the board; raises InvalidRequest/ScoreOutOfRange."""
    if not isinstance(payload, dict):
        raise InvalidRequest("a run must be a JSON object")
    unknown = sorted(set(payload) - RUN_FIELDS)
    if unknown:
        raise InvalidRequest(
            f"unknown field {clip(str(unknown[0]))!r}; a run has run_id, player_id, score,"
            " ended_at, segments, metadata"
        )
    run_id = payload.get("run_id")
    if not isinstance(run_id, str) or not is_run_id(run_id):
        raise InvalidRequest(f"run_id must be a string matching {RUN_ID_PATTERN}")
    pid = check_player_id(payload.get("player_id"))
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
    ended_given = payload.get("ended_at") is not None
    if not ended_given:
        ended = now_ms
    else:
        ended = parse_time(payload["ended_at"], "ended_at")
        if ended < EPOCH_MS:
            raise InvalidRequest(f"ended_at must not be before {EPOCH.date().isoformat()}")
        if ended > now_ms + max_skew_ms:
            raise InvalidRequest(
                f"ended_at is more than {max_skew_ms // 1000} s in the future; check the clock"
            )
    run = Run(run_id, pid, score, ended, now_ms, ended_given=ended_given)
    if payload.get("segments") is not None:
        given = check_segments(payload["segments"], "segments", board.segments)
        # the board's order; the profile fills the dimensions the run leaves out (submit.py)
        run.segments = tuple((d, given[d]) for d in board.segments if d in given)
    if payload.get("metadata") is not None:
        run.metadata = check_metadata(payload["metadata"])
    return run


def check_metadata(value: object) -> str:
    """A run's metadata as the compact JSON text every store keeps (at most 16 keys and
    1,024 bytes so encoded); InvalidRequest otherwise."""
    if not isinstance(value, dict):
        raise InvalidRequest('metadata must be a JSON object, such as {"car": "red-7"}')
    if len(value) > METADATA_MAX_KEYS:
        raise InvalidRequest(f"metadata holds {len(value)} keys; at most {METADATA_MAX_KEYS}")
    try:
        encoded = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:  # e.g. an integer past 64 bits
        raise InvalidRequest(f"metadata cannot be stored: {clip(str(exc))}") from exc
    if len(encoded) > METADATA_MAX_BYTES:
        raise InvalidRequest(
            f"metadata is {len(encoded)} bytes encoded; at most {METADATA_MAX_BYTES}"
        )
    return encoded.decode()
