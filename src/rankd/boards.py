"""Board configuration: what a board is, its validation rules and its per-window codecs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from rankd.codec import MAX_SCORE_LIMIT, Codec
from rankd.errors import InvalidRequest
from rankd.formats import SEGMENT_DIMENSION_PATTERN, check_board_id, clip, is_segment_dimension
from rankd.hooks import parse_hooks
from rankd.leagues import League, parse_league
from rankd.periods import (
    ENDLESS,
    ROLLING,
    SPAN_MS,
    WINDOWS,
    Period,
    PeriodError,
    parse_period,
    period_at,
)
from rankd.results import (
    MAX_GRACE_S,
    MAX_HOLD_TOP,
    MAX_SEGMENT_DIMENSIONS,
    MAX_SHARDS,
    SCORE_FORMATS,
    ScoreFormat,
)
from rankd.schedules import SCHEDULED, Schedule, parse_schedule, unchanged_until

Policy = Literal["best", "sum", "latest"]
DEFAULT_RETENTION = {"daily": 8, "weekly": 35, "monthly": 100}
# the windows a retention may be set for; an hourly period with none set leaves Redis once
# it is archived (plan.expires_at_ms), its hours then read from the archive
RETAINED = frozenset({*DEFAULT_RETENTION, "hourly", "scheduled"})
IMMUTABLE_FIELDS = ("order", "policy", "window_policies", "max_score", "shards", "league")
POLICIES: tuple[Policy, ...] = ("best", "sum", "latest")
# The user-settable fields: what a PUT body may hold and what is stored.
SETTING_FIELDS = (
    "windows",
    "order",
    "policy",
    "window_policies",
    "max_score",
    "max_run_score",
    "shards",
    "hold_top",
    "grace_seconds",
    "retention_days",
    "segments",
    "score_format",
    "client_submits",
    "hooks",
    "schedule",
    "join_required",
    "max_entrants",
    "max_attempts",
    "league",
)
MAX_ENTRANTS = 10_000_000
MAX_ATTEMPTS = 10_000
# The limits the contract states (SCORE_FORMATS, MAX_*) are in rankd.results.
MAX_RETENTION_DAYS = 3_650


@dataclass(frozen=True)
class BoardConfig:
    board_id: str
    windows: tuple[str, ...] = ("all-time",)
    order: Literal["desc", "asc"] = "desc"
    policy: Policy = "best"
    # a policy per window overriding ``policy`` (v1.3), e.g. all-time best, weekly sum
    window_policies: dict[str, Policy] = field(default_factory=dict)
    max_score: int = 1_000_000_000
    max_run_score: int = 1_000_000_000
    shards: int = 1
    hold_top: int = 0
    grace_seconds: int = 3600
    retention_days: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RETENTION))
    # Dimensions whose values get standings of their own, e.g. ("country", "platform").
    segments: tuple[str, ...] = ()
    score_format: ScoreFormat = "integer"  # display only
    # whether a game client may submit its own runs with a player token (v1.3)
    client_submits: bool = False
    # webhooks: event -> the URL told of it (services/webhooks.py)
    hooks: dict[str, str] = field(default_factory=dict)
    # the occurrences of the scheduled window (rankd/schedules.py); None: no such window
    schedule: Schedule | None = None
    # who an occurrence counts (services/tournaments.py): only players who joined it; at
    # most this many players (0: any); at most this many distinct runs a player (0: any)
    join_required: bool = False
    max_entrants: int = 0
    max_attempts: int = 0
    # the board's periodic window as league seasons (rankd/leagues.py); None: no league
    league: League | None = None

    @property
    def admits(self) -> bool:
        """Whether the scheduled window's runs are admitted one by one (joins, caps)."""
        return self.join_required or self.max_entrants > 0 or self.max_attempts > 0

    created_at: datetime | None = None
    # which incarnation of the board id this is (deleting a board and creating it again
    # makes a new one); logged with every run, so replays never mix incarnations
    generation: int = 0
    # periods an admin closed early: (window, period id) -> from when (ms) runs are closed
    closes: dict[tuple[str, str], int] = field(default_factory=dict)

    @cached_property
    def codecs(self) -> dict[str, Codec]:
        return {w: Codec.create(self.max_score, self.order, self._span_ms(w)) for w in self.windows}

    def _span_ms(self, window: str) -> int:
        if window == SCHEDULED:
            assert self.schedule is not None
            return self.schedule.duration.longest_ms
        return SPAN_MS[window]

    def period_at(self, window: str, at_ms: int) -> Period | None:
        """The period of ``window`` holding the instant ``at_ms``; None only for the
        scheduled window, between its occurrences."""
        if window == SCHEDULED:
            return None if self.schedule is None else self.schedule.occurrence_at(at_ms)
        return period_at(window, at_ms)

    def period_of(self, window: str, period_id: str) -> Period:
        """The period named ``period_id`` in ``window``; PeriodError if it is not one."""
        if window == SCHEDULED:
            if self.schedule is None:
                raise PeriodError("this board has no schedule")
            return self.schedule.occurrence(period_id)
        return parse_period(window, period_id)

    def current_period(self, window: str, at_ms: int) -> Period:
        """What a read of ``window`` without ``period`` shows: the period at ``at_ms``; for
        the scheduled window the open occurrence, else the last one that started, else the
        next (PeriodError for a schedule with none left)."""
        if window != SCHEDULED:
            return period_at(window, at_ms)
        assert self.schedule is not None
        found = (
            self.schedule.occurrence_at(at_ms)
            or self.schedule.latest_started(at_ms)
            or self.schedule.next_after(at_ms)
        )
        if found is None:
            raise PeriodError("the schedule has no occurrence")
        return found

    def closes_at_ms(self, period: Period) -> int | None:
        """When ``period`` stops taking runs: its end plus the grace, or earlier when an
        admin closed it; None: never (all-time, rolling-7d)."""
        if period.window in ENDLESS:
            return None
        natural = period.end_ms + self.grace_seconds * 1000
        early = self.closes.get((period.window, period.id))
        return natural if early is None else min(natural, early)

    def period_status(self, period: Period, at_ms: int) -> Literal["open", "closed"]:
        """A run received (or a read made) at ``at_ms`` finds ``period`` open or closed."""
        closes = self.closes_at_ms(period)
        return "open" if closes is None or at_ms < closes else "closed"

    def policy_of(self, window: str) -> Policy:
        """The policy ``window`` keeps its entries by."""
        return self.window_policies.get(window, self.policy)

    @property
    def default_window(self) -> str:
        return self.windows[0]

    def tie_resolution_ms(self) -> dict[str, int]:
        # the composite orders ties at its codec's resolution_ms, the member's stamp within
        # that to the ms (codec.member): 1 on every window, whatever max_score
        return {w: 1 for w in self.codecs}

    def settings(self) -> dict[str, Any]:
        """The stored, user-settable fields (copies: the config stays frozen)."""
        values = {name: getattr(self, name) for name in SETTING_FIELDS}
        values["windows"] = list(self.windows)
        values["retention_days"] = dict(self.retention_days)
        values["window_policies"] = dict(self.window_policies)
        values["segments"] = list(self.segments)
        values["hooks"] = dict(self.hooks)
        values["schedule"] = None if self.schedule is None else self.schedule.as_json()
        values["league"] = None if self.league is None else self.league.as_json()
        return values


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


def from_settings(
    board_id: str,
    values: dict[str, Any],
    created_at: datetime | None,
    generation: int = 0,
    closes: dict[tuple[str, str], int] | None = None,
) -> BoardConfig:
    return BoardConfig(
        board_id=board_id,
        windows=tuple(values["windows"]),
        order=values["order"],
        policy=values["policy"],
        window_policies=dict(values.get("window_policies", {})),  # before v1.3: none
        max_score=values["max_score"],
        max_run_score=values["max_run_score"],
        shards=values["shards"],
        hold_top=values["hold_top"],
        grace_seconds=values["grace_seconds"],
        retention_days=dict(values["retention_days"]),
        segments=tuple(values.get("segments", ())),  # configs stored before segments: none
        score_format=values.get("score_format", "integer"),  # likewise: plain integers
        client_submits=values.get("client_submits", False),  # before v1.3: servers only
        hooks=dict(values.get("hooks", {})),  # before v1.3: none
        schedule=None if values.get("schedule") is None else parse_schedule(values["schedule"]),
        join_required=values.get("join_required", False),
        max_entrants=values.get("max_entrants", 0),
        max_attempts=values.get("max_attempts", 0),
        league=None
        if values.get("league") is None
        else parse_league(values["league"], values["windows"]),
        created_at=created_at,
        generation=generation,
        closes=dict(closes or {}),
    )


def changed_immutable(old: BoardConfig, new: BoardConfig) -> list[str]:
    return [f for f in IMMUTABLE_FIELDS if getattr(old, f) != getattr(new, f)]


def schedule_change_allowed(old: BoardConfig, new: BoardConfig, now_ms: int) -> bool:
    """Whether a board with runs may change its schedule so: every occurrence that has
    started by ``now_ms`` stays as it was (a schedule may not be added or removed)."""
    if old.schedule is None or new.schedule is None:
        return old.schedule is new.schedule
    return unchanged_until(old.schedule, new.schedule, now_ms)
