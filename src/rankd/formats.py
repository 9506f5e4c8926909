"""The wire formats every edge shares: id patterns and RFC 3339 times.

Patterns are matched whole (``fullmatch``): ``$`` would also match before a final newline,
and an id carrying ``\\n`` breaks every text protocol it later travels in. Character classes
spell out ASCII (``[0-9]``, not ``\\d``, which also matches other scripts' digits).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from rankd.errors import InvalidRequest

# The contract's id patterns (CONTRACT.md, Conventions), as text for the OpenAPI document.
BOARD_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
PLAYER_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
RUN_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"

_BOARD_ID = re.compile(BOARD_ID_PATTERN.strip("^$"))
_PLAYER_ID = re.compile(PLAYER_ID_PATTERN.strip("^$"))
_RUN_ID = re.compile(RUN_ID_PATTERN.strip("^$"))

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Longest piece of client input an error message repeats (longer is cut, with an ellipsis).
ECHO_MAX = 80


# A memory size as Redis's maxmemory takes it: 512mb, 4gb; a plain number is bytes
# (RANKD_REDIS_MAX_MEMORY, checked by settings.py and read by embedded/redis_server.py).
MEMORY_SIZE = re.compile(r"[1-9][0-9]{0,15}(b|kb|mb|gb)?", re.IGNORECASE)


def clip(text: str, limit: int = ECHO_MAX) -> str:
    """``text`` as an error message may echo it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


SEGMENT_DIMENSION_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
SEGMENT_VALUE_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
_SEGMENT_DIMENSION = re.compile(SEGMENT_DIMENSION_PATTERN.strip("^$"))
_SEGMENT_VALUE = re.compile(SEGMENT_VALUE_PATTERN.strip("^$"))

TIME_EXAMPLE = "2026-11-03T18:22:07.123Z"
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def is_board_id(value: object) -> bool:
    return isinstance(value, str) and _BOARD_ID.fullmatch(value) is not None


def is_player_id(value: object) -> bool:
    return isinstance(value, str) and _PLAYER_ID.fullmatch(value) is not None


def is_run_id(value: object) -> bool:
    return isinstance(value, str) and _RUN_ID.fullmatch(value) is not None


def is_segment_dimension(value: object) -> bool:
    return isinstance(value, str) and _SEGMENT_DIMENSION.fullmatch(value) is not None


def is_segment_value(value: object) -> bool:
    return isinstance(value, str) and _SEGMENT_VALUE.fullmatch(value) is not None


# A profile's segments serve every board (each has at most 4 dimensions): bounded so a
# profile stays small (16 dimensions of 32-character values: under 1 KB).
MAX_PROFILE_DIMENSIONS = 16


def check_segments(value: object, field: str, dimensions: tuple[str, ...] | None) -> dict[str, str]:
    """A ``{"dimension": "value"}`` object; with ``dimensions``, only those dimensions."""
    if not isinstance(value, dict):
        raise InvalidRequest(f'{field} must be an object such as {{"country": "FR"}}')
    most = MAX_PROFILE_DIMENSIONS if dimensions is None else len(dimensions)
    if len(value) > most and dimensions is None:
        raise InvalidRequest(f"{field} holds {len(value)} dimensions; at most {most}")
    for dimension, item in value.items():
        if dimensions is not None and dimension not in dimensions:
            known = ", ".join(dimensions) or "none"
            raise InvalidRequest(
                f"{field} names the dimension {clip(str(dimension))!r}, which this board does"
                f" not have "
                f"(its dimensions: {known})"
            )
        if not is_segment_dimension(dimension):
            raise InvalidRequest(f"{field} dimensions must match {SEGMENT_DIMENSION_PATTERN}")
        if not is_segment_value(item):
            raise InvalidRequest(f"{field}.{dimension} must match {SEGMENT_VALUE_PATTERN}")
    return value


def check_player_id(value: object, field: str = "player_id") -> str:
    if not is_player_id(value):
        raise InvalidRequest(f"{field} must match {PLAYER_ID_PATTERN}")
    assert isinstance(value, str)
    return value


def check_run_id(value: object, field: str = "run_id") -> str:
    if not is_run_id(value):
        raise InvalidRequest(f"{field} must match {RUN_ID_PATTERN}")
    assert isinstance(value, str)
    return value


def check_board_id(value: object) -> str:
    if not is_board_id(value):
        raise InvalidRequest(f"board_id must match {BOARD_ID_PATTERN}")
    assert isinstance(value, str)
    return value


def parse_time(value: object, field: str) -> int:
    """An RFC 3339 time with a UTC offset, to UTC milliseconds; InvalidRequest otherwise."""
    if not isinstance(value, str) or _RFC3339.fullmatch(value) is None:
        raise InvalidRequest(
            f"{field} must be an RFC 3339 time with a UTC offset, such as {TIME_EXAMPLE}"
        )
    try:
        parsed = datetime.fromisoformat(value.upper())
    except ValueError as exc:  # e.g. month 13 or 25:00
        raise InvalidRequest(f"{field} is not a valid time: {exc}") from exc
    # exact integer arithmetic: timestamp() * 1000 is a float and can land 1 ms low
    return (parsed - _UNIX_EPOCH) // timedelta(milliseconds=1)


def format_time(ms: int) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. 2026-11-03T18:22:07.123Z."""
    return f"{_second(ms // 1000)}{ms % 1000:03d}Z"


@lru_cache(maxsize=65_536)
def _second(seconds: int) -> str:
    # responses repeat the same few seconds (a period start, recent runs): format each once
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")
