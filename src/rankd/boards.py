"""Board configuration: what a board is, its validation rules and its per-window codecs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from rankd.codec import Codec
from rankd.leagues import League, parse_league
from rankd.periods import (
    ENDLESS,
    SPAN_MS,
    Period,
    PeriodError,
    parse_period,
    period_at,
)
from rankd.placement import Layout, base_of
from rankd.reshard import Reshard
from rankd.results import ScoreFormat
from rankd.schedules import SCHEDULED, Schedule, parse_schedule

Policy = Literal["best", "sum", "latest"]
DEFAULT_RETENTION = {"daily": 8, "weekly": 35, "monthly": 100}
# the windows a retention may be set for; an hourly period with none set leaves Redis once
# it is archived (plan.expires_at_ms), its hours then read from the archive
RETAINED = frozenset({*DEFAULT_RETENTION, "hourly", "scheduled"})
# (``shards`` may change: the board is resharded while it serves, services/resharding.py)
IMMUTABLE_FIELDS = ("order", "policy", "window_policies", "max_score", "league")
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
    # the layout reads are served from (a placement.Layout once loaded: its key names too)
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
    # a live resharding under way (rankd/reshard.py); None: none
    reshard: Reshard | None = None

    @property
    def requested_shards(self) -> int:
        """The shards the board was last given (the move's target while it copies)."""
        move = self.reshard
        return int(move.other if move is not None and move.phase == "copy" else self.shards)

    @property
    def other_layout(self) -> Layout | None:
        """The second layout every write also goes to while a move needs it."""
        move = self.reshard
        return move.other if move is not None and move.writes_other else None

    @property
    def layout_key(self) -> str:
        """Where the standings are written, as stores/deletions.current_generations reads
        it from the stored config: the served layout and the move's phase and other one."""
        move = self.reshard
        other = "" if move is None else f"{move.phase}/{int(move.other)}/{base_of(move.other)}"
        return f"{int(self.shards)}/{base_of(self.shards)}/{other or '//'}"

    def stored(self) -> dict[str, Any]:
        """What PostgreSQL keeps: the settings with the served layout and the move."""
        return self.settings() | {
            "shards": int(self.shards),
            "shard_base": base_of(self.shards),
            "reshard": None if self.reshard is None else self.reshard.as_json(),
        }

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
        """The user-settable fields as the API shows them, ``shards`` the count last asked
        for (copies: the config stays frozen); stored() adds the layout and the move."""
        values = {name: getattr(self, name) for name in SETTING_FIELDS}
        values["shards"] = self.requested_shards
        values["windows"] = list(self.windows)
        values["retention_days"] = dict(self.retention_days)
        values["window_policies"] = dict(self.window_policies)
        values["segments"] = list(self.segments)
        values["hooks"] = dict(self.hooks)
        values["schedule"] = None if self.schedule is None else self.schedule.as_json()
        values["league"] = None if self.league is None else self.league.as_json()
        return values


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
        shards=Layout(values["shards"], values.get("shard_base", 0)),
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
        reshard=None if not values.get("reshard") else Reshard.from_json(values["reshard"]),
    )
