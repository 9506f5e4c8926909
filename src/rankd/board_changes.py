"""What a PUT body makes of a board: the new config, checked field by field, and which
changes a board that has runs may not take."""

from __future__ import annotations

from typing import Any

from rankd.boards import (
    IMMUTABLE_FIELDS,
    MAX_ATTEMPTS,
    MAX_ENTRANTS,
    MAX_RETENTION_DAYS,
    POLICIES,
    RETAINED,
    SETTING_FIELDS,
    BoardConfig,
    Policy,
    from_settings,
)
from rankd.codec import MAX_SCORE_LIMIT
from rankd.errors import InvalidRequest
from rankd.formats import SEGMENT_DIMENSION_PATTERN, check_board_id, clip, is_segment_dimension
from rankd.hooks import parse_hooks
from rankd.leagues import parse_league
from rankd.periods import ROLLING, WINDOWS
from rankd.results import (
    MAX_GRACE_S,
    MAX_HOLD_TOP,
    MAX_SEGMENT_DIMENSIONS,
    MAX_SHARDS,
    SCORE_FORMATS,
)
from rankd.schedules import SCHEDULED, parse_schedule, unchanged_until


def _int_field(body: dict[str, Any], name: str, low: int, high: int) -> int | None:
    if name not in body:
        return None
    value = body[name]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidRequest(f"{name} must be an integer in {low}..{high}")
    return value


def _window_policies(value: object) -> dict[str, Policy]:
    """``{"weekly": "sum"}``: windows mapped to a policy of their own."""
    if not isinstance(value, dict) or any(
        w not in WINDOWS or p not in POLICIES for w, p in value.items()
    ):
        raise InvalidRequest(
            "window_policies must map windows to a policy, best, sum or latest, e.g. "
            '{"all-time": "best", "weekly": "sum"}'
        )
    return dict(value)


def apply_changes(board_id: str, current: BoardConfig | None, body: Any) -> BoardConfig:
    """The config that results from a PUT body; omitted fields keep their current value.

    Raises InvalidRequest naming the first bad field. Immutability is checked by the caller,
    which knows whether the board has runs.
    """
    check_board_id(board_id)
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    unknown = sorted(set(body) - set(SETTING_FIELDS))
    if unknown:
        raise InvalidRequest(
            f"unknown field {clip(str(unknown[0]))!r}; allowed: {', '.join(sorted(SETTING_FIELDS))}"
        )
    base = current or BoardConfig(board_id)
    values = base.settings()

    if "windows" in body:
        windows = body["windows"]
        if (
            not isinstance(windows, list)
            or not windows
            or any(w not in WINDOWS for w in windows)
            or len(set(windows)) != len(windows)
        ):
            raise InvalidRequest(
                f"windows must be a non-empty list of distinct values from {', '.join(WINDOWS)}"
            )
        values["windows"] = list(windows)
    for name, allowed in (
        ("order", ("desc", "asc")),
        ("policy", POLICIES),
        ("score_format", SCORE_FORMATS),
    ):
        if name in body:
            if body[name] not in allowed:
                raise InvalidRequest(f"{name} must be one of {', '.join(allowed)}")
            values[name] = body[name]
    max_score = _int_field(body, "max_score", 1, MAX_SCORE_LIMIT)
    if max_score is not None:
        # an unset run bound follows max_score; an explicit one is kept while it fits
        follows = current is None or current.max_run_score == current.max_score
        values["max_run_score"] = max_score if follows else min(values["max_run_score"], max_score)
        values["max_score"] = max_score
    max_run = _int_field(body, "max_run_score", 1, MAX_SCORE_LIMIT)
    if max_run is not None:
        if max_run > values["max_score"]:
            raise InvalidRequest("max_run_score must not exceed max_score")
        values["max_run_score"] = max_run
    for name, low, high in (
        ("max_entrants", 0, MAX_ENTRANTS),
        ("max_attempts", 0, MAX_ATTEMPTS),
        ("shards", 1, MAX_SHARDS),
        ("hold_top", 0, MAX_HOLD_TOP),
        ("grace_seconds", 0, MAX_GRACE_S),
    ):
        parsed = _int_field(body, name, low, high)
        if parsed is not None:
            values[name] = parsed
    for flag in ("client_submits", "join_required"):
        if flag in body:
            if not isinstance(body[flag], bool):
                raise InvalidRequest(f"{flag} must be true or false")
            values[flag] = body[flag]
    if "window_policies" in body:
        values["window_policies"] = _window_policies(body["window_policies"])
    if "hooks" in body:
        values["hooks"] = parse_hooks(body["hooks"], values.get("hooks", {}))
    if "schedule" in body:
        given = body["schedule"]
        values["schedule"] = None if given is None else parse_schedule(given).as_json()
    if values.get("schedule") is not None and SCHEDULED not in values["windows"]:
        values["windows"] = [*values["windows"], SCHEDULED]  # a schedule adds its window
    if values.get("schedule") is None and SCHEDULED in values["windows"]:
        raise InvalidRequest("the scheduled window needs a schedule (starts_at, every, ...)")
    if values.get("schedule") is None and (
        values.get("join_required") or values.get("max_entrants") or values.get("max_attempts")
    ):
        raise InvalidRequest(
            "join_required, max_entrants and max_attempts apply to a schedule's occurrences;"
            " set a schedule too"
        )
    unknown_windows = sorted(set(values["window_policies"]) - set(values["windows"]))
    if unknown_windows:
        raise InvalidRequest(
            f"window_policies names {clip(unknown_windows[0])!r}, which is not one of the "
            "board's windows"
        )
    if (
        ROLLING in values["windows"]
        and values["window_policies"].get(ROLLING, values["policy"]) != "best"
    ):
        raise InvalidRequest(
            "the rolling-7d window keeps best entries only (a sum or latest over a rolling"
            ' window is not built): give it "best" in window_policies'
        )
    policies = {values["window_policies"].get(w, values["policy"]) for w in values["windows"]}
    if values["hold_top"] > 0 and "best" not in policies:
        # a sum's top is reached by many runs, none of which alone is the one to review
        raise InvalidRequest(
            "hold_top applies to best windows only; leave it at 0 on a board with none"
        )
    if "retention_days" in body:
        retention = body["retention_days"]
        if not isinstance(retention, dict) or any(
            k not in RETAINED
            or not isinstance(v, int)
            or isinstance(v, bool)
            or not 0 <= v <= MAX_RETENTION_DAYS
            for k, v in retention.items()
        ):
            raise InvalidRequest(
                "retention_days must map hourly/daily/weekly/monthly/scheduled to whole days "
                f"in 0..{MAX_RETENTION_DAYS} (0: a period leaves Redis once archived)"
            )
        values["retention_days"] = {**values["retention_days"], **retention}
    if "league" in body:
        values["league"] = body["league"]
    if values.get("league") is not None:  # checked against the windows as they now are
        league = parse_league(values["league"], values["windows"], values["grace_seconds"])
        values["league"] = league.as_json()
    if "segments" in body:
        dimensions = body["segments"]
        if (
            not isinstance(dimensions, list)
            or len(dimensions) > MAX_SEGMENT_DIMENSIONS
            or not all(is_segment_dimension(d) for d in dimensions)
            or len(set(dimensions)) != len(dimensions)
        ):
            raise InvalidRequest(
                f"segments must be a list of at most {MAX_SEGMENT_DIMENSIONS} distinct "
                f"dimension names matching {SEGMENT_DIMENSION_PATTERN}"
            )
        values["segments"] = list(dimensions)
    return from_settings(board_id, values, base.created_at, base.generation, base.closes)


def changed_immutable(old: BoardConfig, new: BoardConfig) -> list[str]:
    return [f for f in IMMUTABLE_FIELDS if getattr(old, f) != getattr(new, f)]


def schedule_change_allowed(old: BoardConfig, new: BoardConfig, now_ms: int) -> bool:
    """Whether a board with runs may change its schedule so: every occurrence that has
    started by ``now_ms`` stays as it was (a schedule may not be added or removed)."""
    if old.schedule is None or new.schedule is None:
        return old.schedule is new.schedule
    return unchanged_until(old.schedule, new.schedule, now_ms)
