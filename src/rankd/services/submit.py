"""The write path: validate, make durable in the log, apply every window in one round trip.

1. Runs are validated (by the caller, with rankd.validation) before anything is written.
2. They are published to the log (a batch as one message; concurrent single submits
   share messages, see group_commit.py) and we wait for the ack. No ack: the
   caller gets Unavailable and nothing reaches Redis.
3. For every run and every window of the board one Lua call raises the entry (or adds to a
   sum) and reads the rank in the same atomic step. All calls go in one pipeline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rankd import keys
from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.periods import ALL_TIME, DAY_MS, Period, period_at
from rankd.runs import Run
from rankd.scripts import SUBMIT_BEST, SUBMIT_BEST_MANY, SUBMIT_SUM, Call, run_pipeline
from rankd.services.group_commit import GroupCommitter
from rankd.stores.runlog import RunLog
from rankd.validation import format_time

# How long this process trusts that a period is already in the periods index.
_INDEX_MEMO_S = 60.0


Disposition = Literal["apply", "closed", "expired"]


@dataclass(slots=True)  # not frozen: frozen dataclasses construct several times slower
class Target:
    """One window of one run: what happens to it, and the script call that applies it.

    ``closed``: the run came after its period's grace (decided by when it was received, so
    a replay decides the same). ``expired``: the period has left Redis (retention passed at
    apply time); only the durable copy takes the run.
    """

    window: str
    period: Period
    run: Run
    disposition: Disposition
    call: Call | None = None
    composite: int | None = None  # the run's own composite on a best board


def sum_horizon_ms(board: BoardConfig) -> int:
    """How far back a run may end and still count on a ``sum`` board's all-time total.

    Counted run ids are kept for this long (by ended_at), which bounds their memory; a run
    older than this cannot be proven new, so it is refused for that window.
    """
    return max(board.grace_seconds * 1000, DAY_MS)


def expires_at_ms(board: BoardConfig, period: Period) -> int | None:
    """When a period's keys leave Redis (None: never)."""
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
    for window in board.windows:
        period = period_at(window, run.ended_at_ms)
        if period.status(run.received_at_ms, grace_ms) == "closed":
            targets.append(Target(window, period, run, "closed"))
            continue
        if (
            board.policy == "sum"
            and window == ALL_TIME
            and run.ended_at_ms < run.received_at_ms - sum_horizon_ms(board)
        ):
            targets.append(Target(window, period, run, "closed"))
            continue
        codec = board.codecs[window]
        offset = run.ended_at_ms - period.start_ms
        composite = codec.pack(run.score, offset) if board.policy == "best" else None
        expires = expires_at_ms(board, period)
        if expires is not None and now_ms >= expires:
            targets.append(Target(window, period, run, "expired", composite=composite))
            continue
        pk = keys.period_keys(board.board_id, window, period.id)
        expire_at = "0" if expires is None else str(expires // 1000)
        if composite is not None:
            call: Call = (
                SUBMIT_BEST,
                (pk.public, pk.public),
                (composite, run.player_id, expire_at),
            )
        else:
            trim_before = now_ms - sum_horizon_ms(board) if window == ALL_TIME else 0
            call = (
                SUBMIT_SUM,
                (pk.public, pk.public, pk.runs),
                (
                    run.run_id,
                    run.player_id,
                    run.score,
                    codec.time_key(offset),
                    1 << codec.time_bits,
                    board.max_score,
                    board.order,
                    run.ended_at_ms,
                    trim_before,
                    expire_at,
                ),
            )
        targets.append(Target(window, period, run, "apply", call, composite))
    return targets


def standing(board: BoardConfig, target: Target, result: Sequence[int] | None) -> dict[str, Any]:
    """The client-facing standing for one window from the script's reply."""
    if target.disposition != "apply" or result is None or not result[1]:
        # rank 0: a replayed run too old to count, for a player without an entry
        return {
            "window": target.window,
            "period": target.period.id,
            "status": "closed",
            "improved": False,
            "is_best": False,
        }
    changed, rank, stored, mine = result
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


def coalesce(
    calls: Sequence[Call],
) -> tuple[list[Call], Callable[[Sequence[Any]], list[Sequence[int]]]]:
    """Fold the ``submit_best`` calls that share a key into one ``submit_best_many`` call.

    A batch of 1,000 runs on three windows is three script calls instead of 3,000: the
    client's per-command cost, not Redis's, was the limit. Calls on one key keep their
    order, so the replies are what the single calls would have answered. Returns the calls
    to send and a function that spreads their replies back, one per original call.
    """
    best: dict[tuple[tuple[str, ...], str | int], list[int]] = {}
    sent: list[Call] = []
    members: list[list[int]] = []
    for i, (script, call_keys, args) in enumerate(calls):
        if script is SUBMIT_BEST:
            best.setdefault((tuple(call_keys), args[2]), []).append(i)
        else:
            sent.append(calls[i])
            members.append([i])
    for (call_keys, expire_at), indexes in best.items():
        if len(indexes) == 1:
            sent.append(calls[indexes[0]])
        else:
            pairs = [arg for i in indexes for arg in calls[i][2][:2]]
            sent.append((SUBMIT_BEST_MANY, call_keys, (expire_at, *pairs)))
        members.append(indexes)

    def spread(results: Sequence[Any]) -> list[Sequence[int]]:
        out: list[Sequence[int]] = [()] * len(calls)
        for call, indexes, result in zip(sent, members, results, strict=True):
            if call[0] is not SUBMIT_BEST_MANY:
                out[indexes[0]] = result
                continue
            for j, i in enumerate(indexes):
                out[i] = result[4 * j : 4 * j + 4]
        return out

    return sent, spread


class Submitter:
    def __init__(self, redis: Redis, log: RunLog) -> None:
        self.redis = redis
        self.log = GroupCommitter(log)
        self._indexed: dict[tuple[str, str, str], float] = {}

    async def submit(self, board: BoardConfig, runs: Sequence[Run]) -> list[list[dict[str, Any]]]:
        """Make ``runs`` durable, apply them, and return each run's standings."""
        if not runs:
            return []
        await self.log.append(board.board_id, runs)
        return await self.apply(board, runs)

    async def apply(
        self, board: BoardConfig, runs: Sequence[Run], now_ms: int | None = None
    ) -> list[list[dict[str, Any]]]:
        """Apply already-logged runs to Redis (idempotent) and return their standings."""
        plans = [plan(board, run, now_ms) for run in runs]
        replies = await self.run_plans(board, plans)
        return [
            [standing(board, t, r) for t, r in zip(p, rs, strict=True)]
            for p, rs in zip(plans, replies, strict=True)
        ]

    async def run_plans(
        self, board: BoardConfig, plans: Sequence[Sequence[Target]]
    ) -> list[list[Sequence[int] | None]]:
        """Send every planned script call in one pipeline; replies shaped like ``plans``."""
        calls = [t.call for p in plans for t in p if t.call is not None]
        extra, memos = self._index_commands(board, plans)
        sent, spread = coalesce(calls)
        try:
            results = await run_pipeline(self.redis, sent, extra) if sent or extra else []
        except (RedisError, OSError) as exc:
            # The runs are in the log; a retry is harmless and the log consumer heals Redis.
            raise Unavailable(
                "the run was logged but the boards are unreachable; retrying is safe"
            ) from exc
        now = time.monotonic()
        self._indexed.update((memo, now) for memo in memos)
        replies = iter(spread(results[: len(sent)]))
        return [[next(replies) if t.call is not None else None for t in p] for p in plans]

    def forget_indexed(self) -> None:
        """After a rebuild the periods index must be written again."""
        self._indexed.clear()

    def _index_commands(
        self, board: BoardConfig, plans: Sequence[Sequence[Target]]
    ) -> tuple[list[tuple[str, tuple[Any, ...]]], set[tuple[str, str, str]]]:
        """ZADD NX of newly seen periods into the per-window periods index."""
        now = time.monotonic()
        commands: list[tuple[str, tuple[Any, ...]]] = []
        memos: set[tuple[str, str, str]] = set()
        for targets in plans:
            for t in targets:
                if t.call is None:
                    continue
                memo = (board.board_id, t.window, t.period.id)
                seen = self._indexed.get(memo)
                if (seen is not None and now - seen < _INDEX_MEMO_S) or memo in memos:
                    continue
                memos.add(memo)
                index = keys.periods_index(board.board_id, t.window)
                commands.append(("ZADD", (index, "NX", t.period.start_ms, t.period.id)))
        return commands, memos
