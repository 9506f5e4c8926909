"""What a run does to each window of a board: the per-window decision, with no I/O.

A run lands in the board's global standings and in the standings of each segment it
belongs to (``country:FR``), in every window. For every window the run's ``ended_at``
picks a period; the period may be past its grace (``closed``: nothing is written), gone
from Redis after its retention (``expired``: only the durable copy takes the run), or live
(``apply``: one script raises the entry, or adds to a sum, in that period). The submit
path, the log consumer, rebuild and replay all decide with these functions, so they decide
alike. The Redis store turns an ``apply`` target into its script call; this module names
the operation, never a key.

Moderation is an input, not a later edit: ``plan`` takes a ``Visibility`` (who is banned,
at one moment) and reads the windows a run is held in from the run itself (decided before
logging), and returns immutable targets; a step that decides more (a review decision, a
late run's count) derives new targets with ``dataclasses.replace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from rankd.boards import BoardConfig
from rankd.formats import format_time
from rankd.periods import ALL_TIME, DAY_MS, ENDLESS, ROLLING, Period, rolling_first_day
from rankd.results import Standing
from rankd.runs import Run
from rankd.schedules import SCHEDULED

Disposition = Literal["apply", "late", "closed", "expired", "not_open", "refused"]
Operation = Literal["best", "sum", "latest"]
# Where a target's entry is written: the public board, the banned players' :shadow key, or
# the :pending key of runs held for review (see services/moderation.py).
Side = Literal["public", "shadow", "pending"]


@dataclass(frozen=True, slots=True)
class Visibility:
    """Who must not show on the public boards, as one write saw it: the banned players,
    and the entries an admin removed ((board, window, period, player) -> when: runs that
    ended by then no longer count there). services/moderation.py keeps the instance's copy;
    a snapshot is never changed."""

    banned: frozenset[str] = field(default_factory=frozenset)
    # (board, window, period, player) -> (removed at ms, the board generation it holds for)
    removed: Mapping[tuple[str, str, str, str], tuple[int, int]] = field(
        default_factory=lambda: MappingProxyType({})
    )


NOBODY_HIDDEN = Visibility()


# Frozen; what a later step decides is a new target (dataclasses.replace). Not slotted:
# plan() builds its targets with _target_of, which fills the instance dict at once (a
# frozen dataclass's __init__ sets each field through object.__setattr__, about four times
# slower, and plan() builds two to twelve targets a run).
@dataclass(frozen=True)
class Target:
    """One window of one run: what happens to it.

    ``not_open``: on the scheduled window, the run ended between occurrences (``period``
    is then the one before, or the first). ``refused``: its occurrence does not count it
    (``run.refused`` says why, decided before logging: services/tournaments.py).
    ``closed``: the run came after its period's grace (decided by when it was received, so a
    replay decides the same). ``expired``: the period
    has left Redis (retention passed at apply time); only the durable copy takes the run.
    ``late``: a run on a sum board's all-time window older than Redis remembers counted run
    ids; PostgreSQL decides whether it was counted before (see services/late_sums.py), then it
    is applied like ``apply``.

    For ``apply``: ``operation`` says which script (``best``: a max of ``composite``;
    ``latest``: the run with the latest end, ranked by its ``composite``;
    ``sum``: add ``run.score`` once per run id, the time part being ``time_key``) and, on a
    sum board's all-time window, ``trim_before_ms``: counted run ids older than this are
    forgotten. No key gets a TTL: the season job removes a period's keys.
    """

    window: str
    period: Period
    run: Run
    disposition: Disposition
    operation: Operation
    composite: int | None = None  # the run's own composite on a best board
    segment: str = ""  # "" for the global standings, else "<dimension>:<value>"
    time_key: int = 0
    trim_before_ms: int = 0
    # a late run's id in Redis is scored by when PostgreSQL first counted it (0: not late)
    counted_ms: int = 0
    side: Side = "public"
    # the submit path marks what it applies; the log consumer skips targets so marked
    mark: bool = False

    @property
    def applies(self) -> bool:
        return self.disposition == "apply"

    @property
    def sendable(self) -> bool:
        """Whether the Redis store sends this target's script: a live period, or a late run
        once PostgreSQL has settled it (``counted_ms`` set)."""
        return self.disposition == "apply" or (self.disposition == "late" and self.counted_ms > 0)


_new = object.__new__


def _target_of(
    window: str,
    period: Period,
    run: Run,
    disposition: Disposition,
    operation: Operation,
    composite: int | None = None,
    segment: str = "",
    time_key: int = 0,
    trim_before_ms: int = 0,
    side: Side = "public",
    mark: bool = False,
) -> Target:
    """``Target(...)`` with ``counted_ms`` 0, built fast (see Target;
    tests/unit/test_plan.py checks that it fills every field)."""
    target: Target = _new(Target)
    target.__dict__.update(
        {
            "window": window,
            "period": period,
            "run": run,
            "disposition": disposition,
            "operation": operation,
            "composite": composite,
            "segment": segment,
            "time_key": time_key,
            "trim_before_ms": trim_before_ms,
            "counted_ms": 0,
            "side": side,
            "mark": mark,
        }
    )
    return target


# A script's reply for one target: (changed, rank, stored composite, mine, achieved ms).
# a submit script's answer (lua/submit_best.lua): changed, rank, stored, mine, achieved,
# and the entry before: prev_rank (0: none), prev_stored, prev_achieved
Reply = tuple[int, int, int, int, int, int, int, int]


def sum_horizon_ms(board: BoardConfig) -> int:
    """How far back a run may end and still be counted on a ``sum`` board's all-time total
    by Redis alone; an older one is ``late`` and PostgreSQL decides whether it is new.

    Counted run ids stay in Redis for four horizons (by ended_at, or by when a late run was
    counted), which bounds their memory and covers every run Redis decided on, with a
    horizon to spare for clocks that differ.
    """
    return max(board.grace_seconds * 1000, DAY_MS)


def counted_ids_kept_since(board: BoardConfig, now_ms: int) -> int:
    """Counted run ids scored before this leave a sum board's all-time set."""
    return now_ms - 4 * sum_horizon_ms(board)


def recently_counted(board: BoardConfig, counted_ms: int, now_ms: int) -> bool:
    """Whether Redis may not have taken a late run's count yet: it was counted in
    PostgreSQL within two horizons, so its id is still in Redis if Redis counted it."""
    return counted_ms >= now_ms - 2 * sum_horizon_ms(board)


def expires_at_ms(board: BoardConfig, period: Period) -> int | None:
    """When a period's keys leave Redis (None: never), by the board's current config: the
    season job removes them then, once the period is archived."""
    if period.window in ENDLESS:
        return None
    retention_ms = board.retention_days.get(period.window, 0) * DAY_MS
    return period.end_ms + board.grace_seconds * 1000 + retention_ms


def plan(
    board: BoardConfig,
    run: Run,
    now_ms: int | None = None,
    seen: Visibility = NOBODY_HIDDEN,
    *,
    mark: bool = False,
) -> list[Target]:
    """What applying ``run`` does to every window of ``board`` at ``now_ms``: the global
    standings' targets (one per window, in window order), then each segment's.

    ``now_ms`` defaults to when the run was received; the log consumer and replays pass the
    time they apply it. A live window the run is held in goes to :pending (a run held
    before its player's ban too); else a banned player's targets (by ``seen``) go to the
    :shadow keys, in every disposition. ``mark``
    (the submit path): the scripts note that the target was applied, so the log consumer
    skips it.
    """
    now_ms = run.received_at_ms if now_ms is None else now_ms
    hidden = run.player_id in seen.banned
    targets = [_target(board, run, window, now_ms, hidden, mark) for window in board.windows]
    if seen.removed:  # an admin removed an entry: the runs that ended by then no longer count
        targets = [_unless_removed(board, run, t, seen) for t in targets]
    if run.segments:
        segments = [f"{dimension}:{value}" for dimension, value in run.segments]
        for window_target in list(targets):
            for segment in segments:
                copy = _target_of(
                    window_target.window,
                    window_target.period,
                    run,
                    window_target.disposition,
                    window_target.operation,
                    window_target.composite,
                    segment,
                    window_target.time_key,
                    window_target.trim_before_ms,
                    window_target.side,
                    mark,
                )
                targets.append(copy)
    return targets


def _unless_removed(board: BoardConfig, run: Run, target: Target, seen: Visibility) -> Target:
    removal = seen.removed.get((board.board_id, target.window, target.period.id, run.player_id))
    if (
        removal is None
        or run.ended_at_ms > removal[0]
        or removal[1] != board.generation
        or target.disposition in ("closed", "not_open", "refused")
    ):
        return target
    return _target_of(
        target.window, target.period, run, "closed", target.operation, side=target.side
    )


def _target(
    board: BoardConfig, run: Run, window: str, now_ms: int, hidden: bool, mark: bool
) -> Target:
    operation: Operation = board.policy_of(window)
    # a banned player's entries go to :shadow, unless held for review (below)
    side: Side = "shadow" if hidden else "public"
    found = board.period_at(window, run.ended_at_ms)
    if found is None:  # the scheduled window, between occurrences: nothing is written
        period = board.current_period(window, run.ended_at_ms)
        return _target_of(window, period, run, "not_open", operation, side=side, mark=mark)
    period = found
    if board.period_status(period, run.received_at_ms) == "closed":
        return _target_of(window, period, run, "closed", operation, side=side, mark=mark)
    if window == ROLLING and run.ended_at_ms // DAY_MS < rolling_first_day(run.received_at_ms):
        # ended on a day the rolling window no longer held when the run came
        return _target_of(window, period, run, "closed", operation, side=side, mark=mark)
    if run.refused and window == SCHEDULED:
        return _target_of(window, period, run, "refused", operation, side=side, mark=mark)
    codec = board.codecs[window]
    offset = run.ended_at_ms - period.start_ms
    if (
        operation == "sum"
        and window == ALL_TIME
        and run.ended_at_ms < run.received_at_ms - sum_horizon_ms(board)
    ):
        return _target_of(
            window,
            period,
            run,
            "late",
            operation,
            time_key=codec.time_key(offset),
            trim_before_ms=counted_ids_kept_since(board, now_ms),
            side=side,
            mark=mark,
        )
    # a latest entry ranks like a best one (by score, then time); which run holds it is
    # the scripts' and the durable copy's rule (lua/submit_latest.lua)
    composite = codec.pack(run.score, offset) if operation != "sum" else None
    expires = expires_at_ms(board, period)
    if expires is not None and now_ms >= expires:
        return _target_of(
            window, period, run, "expired", operation, composite, side=side, mark=mark
        )
    # no TTL on the keys: the season job archives the period, then removes them
    # (services/seasons.py), so a retention change still applies
    # a run held before its player's ban still waits for review, banned or not: on
    # :shadow it would count as the player's entry, and an unban (or a rebuild after one)
    # would publish a run nobody approved
    if window in run.held:
        side = "pending"
    if composite is not None:
        return _target_of(window, period, run, "apply", operation, composite, side=side, mark=mark)
    return _target_of(
        window,
        period,
        run,
        "apply",
        operation,
        time_key=codec.time_key(offset),
        trim_before_ms=counted_ids_kept_since(board, now_ms) if window == ALL_TIME else 0,
        side=side,
        mark=mark,
    )


def _status_of(target: Target) -> Any:
    """The status of a standing that counted nothing."""
    if target.disposition == "refused":
        return target.run.refused
    return "not_open" if target.disposition == "not_open" else "closed"


def standing(board: BoardConfig, target: Target, reply: Reply | None) -> Standing:
    """The client-facing standing for one window from the script's reply."""
    segment = target.segment or None
    if target.disposition not in ("apply", "late") or reply is None or not reply[1]:
        # rank 0: a replayed run too old to count, for a player without an entry
        return {
            "window": target.window,
            "period": target.period.id,
            "segment": segment,
            "status": _status_of(target),
            "improved": False,
            "is_best": False,
        }
    changed, rank, stored, mine, achieved_ms, previous, _, _ = reply
    score, offset = board.codecs[target.window].unpack(int(stored))
    # the exact time; an entry written before exact times were kept has the tie bucket's
    achieved_ms = int(achieved_ms) or target.period.start_ms + offset
    return {
        "window": target.window,
        "period": target.period.id,
        "segment": segment,
        # a banned player's answer says "ranked" (their own-view rank) like anyone's
        "status": "held" if target.side == "pending" else "ranked",
        "rank": int(rank),
        "previous_rank": int(previous) or None,
        "score": score,
        "achieved_at": format_time(achieved_ms),
        "improved": bool(changed),
        "is_best": bool(mine),
    }
