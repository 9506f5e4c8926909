"""A run as it travels: validated fields, and its encoding in the log.

One log message carries one or more runs of one board. Idempotency comes from ``run_id`` in
the stores, not from the log, so a batch may travel as one message. A run carries the
segments it was resolved into at submit time (its own, else the player's profile), so a
replay puts it in the same standings whatever the profile says later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

# 2: runs carry their segments ({"country": "FR"}); 1 (before segments) still decodes.
# A run held for review carries a 7th field, the windows it is held in (version 2 readers
# before holds refuse it, which parks it rather than publishing it unreviewed). A run with
# metadata carries it as an 8th (the 7th then [] when it is not held); readers from before
# metadata refuse it likewise, rather than dropping what the client sent. A league board's
# run carries its placement as a 10th (the 9th then "" when the run is not refused).
LOG_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)

Segments = tuple[tuple[str, str], ...]  # (dimension, value) pairs, in the board's order
# why a scheduled board's occurrence does not count a run (a standing's status there)
REFUSALS = ("not_joined", "full", "attempts_exhausted")
# a league placement in the log: "<tier>:<ordinal>", or "wait:<n>" (the n-th to wait for the
# period's tiers); numbers fit PostgreSQL's int
PLACEMENT = re.compile(r"(?:wait|[0-9]|1[0-5]):(?:0|[1-9][0-9]{0,8})")


@dataclass(slots=True)  # one per submitted run: frozen dataclasses construct slower
class Run:
    run_id: str
    player_id: str
    score: int
    ended_at_ms: int
    received_at_ms: int  # decides open/closed periods, so a replay decides the same way
    segments: Segments = ()
    # False when the client sent no ended_at (it defaults to the first receipt; not logged)
    ended_given: bool = True
    # windows in which the run is held for review (decided before logging, so the consumer
    # and a replay hold it in the same windows)
    held: tuple[str, ...] = ()
    # the client's metadata object as compact JSON text ("" for none), kept byte for byte
    # from the request to Redis, PostgreSQL and every read (validation.py bounds it)
    metadata: str = ""
    # why the scheduled window does not count the run ("" : it does): not_joined, full or
    # attempts_exhausted, decided before logging (services/tournaments.py)
    refused: str = ""
    # a league board's placement of the player in the run's period, decided before logging
    # (services/leagues.py): "<tier>:<ordinal>", "wait:<n>" (their tier is not known yet:
    # the n-th to wait), or
    # "" (no league, or the run places no one)
    league: str = ""
    # when the log stored the run's message (0: not known; the log consumer's, not logged
    # itself): its submitter writes Redis right after, so the consumer counts its wait for
    # the run's mark from then too (services/write_pipeline.py)
    logged_ms: int = 0


def encode_message(board_id: str, runs: list[Run], generation: int = 0) -> bytes:
    """One log message of a board's runs; ``generation``: the board incarnation they were
    sent to (omitted when 0, so messages of boards created before generations read alike)."""
    return orjson.dumps(
        {
            "v": LOG_FORMAT_VERSION,
            "board": board_id,
            **({"g": generation} if generation else {}),
            "runs": [
                [
                    r.run_id,
                    r.player_id,
                    r.score,
                    r.ended_at_ms,
                    r.received_at_ms,
                    dict(r.segments),
                    *_tail(r),
                ]
                for r in runs
            ],
        }
    )


def _tail(run: Run) -> list[Any]:
    """A run's optional fields: the windows it is held in, its metadata (embedded as the
    JSON it already is, not parsed and encoded again; null for none), then why the
    scheduled window refuses it, then its league placement; trailing empty ones left out."""
    if run.league:
        meta = orjson.Fragment(run.metadata) if run.metadata else None
        return [list(run.held), meta, run.refused, run.league]
    if run.refused:
        meta = orjson.Fragment(run.metadata) if run.metadata else None
        return [list(run.held), meta, run.refused]
    if run.metadata:
        return [list(run.held), orjson.Fragment(run.metadata)]
    return [list(run.held)] if run.held else []


def _run(fields: list[Any]) -> Run:
    run = Run(str(fields[0]), str(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]))
    if len(fields) > 5:
        segments = fields[5]
        if not isinstance(segments, dict):
            raise TypeError("segments must be an object")
        run.segments = tuple((str(d), str(v)) for d, v in segments.items())
    if len(fields) > 6:
        if not isinstance(fields[6], list):
            raise TypeError("held windows must be a list")
        run.held = tuple(str(w) for w in fields[6])
    if len(fields) > 7 and fields[7] is not None:
        if not isinstance(fields[7], dict):
            raise TypeError("metadata must be an object")
        run.metadata = orjson.dumps(fields[7]).decode()
    if len(fields) > 8:
        # "" only before a league placement
        if fields[8] not in REFUSALS and not (fields[8] == "" and len(fields) > 9):
            raise TypeError(f"unknown refusal {fields[8]!r}")
        run.refused = fields[8]
    if len(fields) > 9:
        if not isinstance(fields[9], str) or not PLACEMENT.fullmatch(fields[9]):
            raise TypeError(f"unknown league placement {fields[9]!r}")
        run.league = fields[9]
    if len(fields) not in (5, 6, 7, 8, 9, 10):
        raise TypeError(f"a run has 5 to 10 fields, not {len(fields)}")
    return run


def decode_message(data: bytes) -> tuple[str, list[Run]]:
    """Inverse of encode_message; ValueError for anything malformed."""
    board_id, _, runs = decode_batch(data)
    return board_id, runs


def decode_batch(data: bytes) -> tuple[str, int, list[Run]]:
    """(board id, board generation, runs) of a log message; ValueError if malformed."""
    try:
        body: Any = orjson.loads(data)
        if body.get("v") not in _READABLE_VERSIONS:
            raise ValueError(f"unknown log format version {body.get('v')!r}")
        generation = body.get("g", 0)
        if not isinstance(generation, int) or isinstance(generation, bool):
            raise TypeError("the board generation must be an integer")
        return str(body["board"]), generation, [_run(fields) for fields in body["runs"]]
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"malformed log message: {exc}") from exc
