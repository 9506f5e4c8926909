"""A run as it travels: validated fields, and its encoding in the log.

One log message carries one or more runs of one board. Idempotency comes from ``run_id`` in
the stores, not from the log, so a batch may travel as one message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

LOG_FORMAT_VERSION = 1


@dataclass(slots=True)  # one per submitted run: frozen dataclasses construct slower
class Run:
    run_id: str
    player_id: str
    score: int
    ended_at_ms: int
    received_at_ms: int  # decides open/closed periods, so a replay decides the same way


def encode_message(board_id: str, runs: list[Run]) -> bytes:
    return orjson.dumps(
        {
            "v": LOG_FORMAT_VERSION,
            "board": board_id,
            "runs": [
                [r.run_id, r.player_id, r.score, r.ended_at_ms, r.received_at_ms] for r in runs
            ],
        }
    )


def decode_message(data: bytes) -> tuple[str, list[Run]]:
    """Inverse of encode_message; ValueError for anything malformed."""
    try:
        body: Any = orjson.loads(data)
        if body.get("v") != LOG_FORMAT_VERSION:
            raise ValueError(f"unknown log format version {body.get('v')!r}")
        runs = [Run(str(a), str(b), int(c), int(d), int(e)) for a, b, c, d, e in body["runs"]]
        return str(body["board"]), runs
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed log message: {exc}") from exc
