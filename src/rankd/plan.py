"""What a run does to each window of a board: the per-window decision, with no I/O.

For every window the run's ``ended_at`` picks a period; the period may be past its grace
(``closed``: nothing is written), gone from Redis after its retention (``expired``: only
the durable copy takes the run), or live (``apply``: one script raises the entry, or adds
to a sum, in that period). The submit path, the log consumer, rebuild and replay all decide
with these functions, so they decide alike. The Redis store turns an ``apply`` target into
its script call; this module names the operation, never a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rankd.boards import BoardConfig
from rankd.formats import format_time
from rankd.periods import ALL_TIME, DAY_MS, Period, period_at
from rankd.results import Standing
from rankd.runs import Run

Disposition = Literal["apply", "closed", "expired"]
Operation = Literal["best", "sum"]


@dataclass(slots=True)  # not frozen: frozen dataclasses construct several times slower
class Target:
    """One window of one run: what happens to it.

    ``closed``: the run came after its period's grace (decided by when it was received, so
    a replay decides the same). ``expired``: the period has left Redis (retention passed at
    apply time); only the durable copy takes the run.

    For ``apply``: ``operation`` says which script (``best``: a max of ``composite``;
    ``sum``: add ``run.score`` once per run id, the time part being ``time_key``),
    ``expire_at_s`` when the period's keys leave Redis (0: never) and, on a sum board's
    all-time window, ``trim_before_ms``: counted run ids older than this are forgotten.
    """

    window: str
    period: Period
    run: Run
    disposition: Disposition
    operation: Operation
    composite: int | None = None  # the run's own composite on a best board
    time_key: int = 0
    expire_at_s: int = 0
    trim_before_ms: int = 0

    @property
    def applies(self) -> bool:
        return self.disposition == "apply"


# A script's reply for one target: (changed, rank, stored composite, mine).
Reply = tuple[int, int, int, int]


def sum_horizon_ms(board: BoardConfig) -> int:
    """How far back a run may end and still count on a ``sum`` board's all-time total.

    Counted run ids are kept for this long (by ended_at), which bounds their memory; a run
    older than this cannot be proven new, so it is refused for that window.
    """
    return max(board.grace_seconds * 1000, DAY_MS)


def expires_at_ms(board: BoardConfig, period: Period) -> int | None:
    """When a period's keys leave Redis (None: never), by the board's current config: the
    season job removes them then, once the period is archived."""
    if period.window == ALL_TIME:
        return None
    retention_ms = board.retention_days.get(period.window, 0) * DAY_MS
    return period.end_ms + board.grace_seconds * 1000 + retention_ms


def plan(board: BoardConfig, run: Run, now_ms: int | None = None) -> list[Target]:
    """What applying ``run`` does to every window of ``board`` at ``now_ms``.

    ``now_ms`` defaults to when the run was received; the log consumer and replays pass the
    time they apply it.
    """
    now_ms = run.received_at_ms if now_ms is None else now_ms
    targets = []
    grace_ms = board.grace_seconds * 1000
    operation: Operation = board.policy
    for window in board.windows:
        period = period_at(window, run.ended_at_ms)
        if period.status(run.received_at_ms, grace_ms) == "closed" or (
            operation == "sum"
            and window == ALL_TIME
            and run.ended_at_ms < run.received_at_ms - sum_horizon_ms(board)
        ):
            targets.append(Target(window, period, run, "closed", operation))
            continue
        codec = board.codecs[window]
        offset = run.ended_at_ms - period.start_ms
        composite = codec.pack(run.score, offset) if operation == "best" else None
        expires = expires_at_ms(board, period)
        if expires is not None and now_ms >= expires:
            targets.append(Target(window, period, run, "expired", operation, composite))
            continue
        # no TTL on the keys (expire_at_s stays 0): the season job archives the period,
        # then removes them (services/seasons.py), so a retention change still applies
        target = Target(window, period, run, "apply", operation, composite)
        if composite is None:
            target.time_key = codec.time_key(offset)
            if window == ALL_TIME:
                target.trim_before_ms = now_ms - sum_horizon_ms(board)
        targets.append(target)
    return targets


def standing(board: BoardConfig, target: Target, reply: Reply | None) -> Standing:
    """The client-facing standing for one window from the script's reply."""
    if not target.applies or reply is None or not reply[1]:
        # rank 0: a replayed run too old to count, for a player without an entry
        return {
            "window": target.window,
            "period": target.period.id,
            "status": "closed",
            "improved": False,
            "is_best": False,
        }
    changed, rank, stored, mine = reply
    score, offset = board.codecs[target.window].unpack(int(stored))
    return {
        "window": target.window,
        "period": target.period.id,
        "status": "ranked",
        "rank": int(rank),
        "score": score,
        "achieved_at": format_time(target.period.start_ms + offset),
        "improved": bool(changed),
        "is_best": bool(mine),
    }
