"""The write path: a submit's (or the log consumer's) planned targets as script calls, sent in
one pipeline with the periods-index updates they need and, for a submit, a change notice."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rankd import codec, metrics
from rankd.boards import BoardConfig
from rankd.errors import PeriodBusy
from rankd.plan import Reply, Target
from rankd.stores.redis import keys
from rankd.stores.redis.common import mark_of, side_keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.marks import Marks, PeriodsIndex
from rankd.stores.redis.notices import change_notice
from rankd.stores.redis.scripts import (
    AHEAD,
    FOLD_MAX_ARGS,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_LATEST,
    SUBMIT_REPLY_WIDTH,
    SUBMIT_SUM,
    Call,
)


def script_call(board: BoardConfig, target: Target, now_ms: int = 0, keep_ms: int = 0) -> Call:
    """The script call that applies one planned target; a ``mark``ed target also notes in
    the period's :applied key that the submit path applied it (at ``now_ms``, forgetting
    marks older than ``keep_ms``)."""
    run = target.run
    pk = keys.own_keys(
        board.board_id, target.window, target.period.id, target.segment, run.player_id, board.shards
    )
    marked = mark_of(run.run_id, run.player_id) if target.mark else ""
    if target.operation != "sum":
        assert target.composite is not None
        latest = target.operation == "latest"
        return (
            SUBMIT_LATEST if latest else SUBMIT_BEST,
            (*side_keys(pk, target.side), pk.applied),
            (
                target.composite,
                run.player_id,
                run.ended_at_ms,
                marked,
                now_ms,
                now_ms - keep_ms,
                run.metadata,
                *((run.run_id,) if latest else ()),
            ),
        )
    return (
        SUBMIT_SUM,
        (*side_keys(pk, target.side), pk.runs, pk.applied),
        (
            run.run_id,
            run.player_id,
            run.score,
            target.time_key,
            1 << board.codecs[target.window].time_bits,
            board.max_score,
            board.order,
            run.ended_at_ms,
            target.trim_before_ms,
            target.counted_ms,
            marked,
            now_ms,
            now_ms - keep_ms,
            run.metadata,
        ),
    )


def coalesce(
    calls: Sequence[Call],
) -> tuple[list[Call], Callable[[Sequence[Any]], list[Sequence[int]]]]:
    """Fold the ``submit_best`` calls that share a key into one ``submit_best_many`` call.

    A batch of 1,000 runs on three windows is three script calls instead of 3,000: the
    client's per-command cost, not Redis's, was the limit. Calls on one key keep their
    order, so the replies are what the single calls would have answered. Returns the calls
    to send and a function that spreads their replies back, one per original call.
    """
    # submit_best arguments: composite, member, ended, mark, now, forget, metadata before
    best: dict[tuple[tuple[str, ...], Any, Any], list[int]] = {}
    sent: list[Call] = []
    members: list[list[int]] = []
    for i, (script, call_keys, args) in enumerate(calls):
        if script is SUBMIT_BEST:
            best.setdefault((tuple(call_keys), args[4], args[5]), []).append(i)
        else:
            sent.append(calls[i])
            members.append([i])
    for (call_keys, now, forget), indexes in best.items():
        for part in _bounded(indexes):
            if len(part) == 1:
                sent.append(calls[part[0]])
            else:
                items = [a for i in part for a in (*calls[i][2][:4], calls[i][2][6])]
                sent.append((SUBMIT_BEST_MANY, call_keys, (now, forget, *items)))
            members.append(part)

    def spread(results: Sequence[Any]) -> list[Sequence[int]]:
        out: list[Sequence[int]] = [()] * len(calls)
        for call, indexes, result in zip(sent, members, results, strict=True):
            if call[0] is not SUBMIT_BEST_MANY:
                out[indexes[0]] = result
                continue
            for j, i in enumerate(indexes):
                out[i] = result[SUBMIT_REPLY_WIDTH * j : SUBMIT_REPLY_WIDTH * (j + 1)]
        return out

    return sent, spread


def _bounded(indexes: list[int]) -> list[list[int]]:
    """``indexes`` in order, cut into parts whose folded call (five arguments a run) keeps
    within FOLD_MAX_ARGS (scripts.py)."""
    size = FOLD_MAX_ARGS // 5
    return [indexes[i : i + size] for i in range(0, len(indexes), size)]


class Writes:
    """Planned targets applied to the boards' keys."""

    def __init__(self, conn: RedisConn, index: PeriodsIndex, marks: Marks) -> None:
        self.conn = conn
        self.index = index
        self.marks = marks

    async def apply(
        self,
        board: BoardConfig,
        plans: Sequence[Sequence[Target]],
        *,
        announce: bool = False,
        ranked: bool | None = None,
    ) -> list[list[Reply | None]]:
        """Run every sendable target of ``plans`` in one pipeline, with the periods-index
        updates they need; replies shaped like ``plans`` (None where nothing was sent).
        With ``announce``, the pipeline ends with one change notice (see change_notice).
        ``ranked`` (default: as ``announce``, the submit path) asks for the ranks in the
        replies on the whole board; else a sharded board's replies rank on the shard."""
        now_ms = int(time.time() * 1000)
        keep_ms = self.marks.keep_ms
        calls = [script_call(board, t, now_ms, keep_ms) for p in plans for t in p if t.sendable]
        extra, memos = self.index.commands(board.board_id, plans)
        if announce:
            extra += change_notice(board.board_id, plans)
        sent, spread = coalesce(calls)
        with reachable():
            results = await self.conn.pipeline(sent, extra) if sent or extra else []
        for memo in memos:
            self.index.remember(memo)
        replies = iter(spread(results[: len(sent)]))
        out = [[next(replies) if t.sendable else None for t in p] for p in plans]
        if (announce if ranked is None else ranked) and board.shards > 1:
            await self._board_ranks(board, plans, out)
        return out  # type: ignore[return-value]

    async def apply_other(
        self, board: BoardConfig, plans: Sequence[Sequence[Target]], *, consumer: bool
    ) -> None:
        """While ``board`` is resharded, its other layout takes every write too
        (rankd/reshard.py); nothing of it is answered. The log consumer (``consumer``)
        skips the targets the submit path marked there. Where Redis fails, so does the
        caller (a submit answers 503, as when its first write fails: the switch must find
        every acknowledged run in the new layout). A period the move is still building
        (PeriodBusy) is skipped: the move builds it from PostgreSQL before it switches."""
        layout = board.other_layout
        if layout is None:
            return
        other = replace(board, shards=layout, reshard=None)
        try:
            sent: Sequence[Sequence[Target]] = plans
            if consumer:
                targets = [t for p in plans for t in p if t.sendable]
                found = await self.marks.find_marks(other, targets)
                skip = {id(t) for t, m in zip(targets, found, strict=True) if m}
                sent = [[t for t in p if id(t) not in skip] for p in plans]
            await self.apply(other, sent, ranked=False)
        except PeriodBusy:
            metrics.RESHARD_WRITES_SKIPPED.inc()

    async def _board_ranks(
        self,
        board: BoardConfig,
        plans: Sequence[Sequence[Target]],
        replies: list[list[Sequence[int] | None]],
    ) -> None:
        """A sharded board's submit replies rank on the entry's own shard; add the entries
        ahead of it on every other shard (one more pipeline, every shard's ahead.lua), for
        the entry before the run too when it moved."""
        calls: list[Call] = []
        slots: list[tuple[int, int]] = []
        for i, (targets, answered) in enumerate(zip(plans, replies, strict=True)):
            for j, (t, reply) in enumerate(zip(targets, answered, strict=True)):
                if reply is None or not int(reply[1]):
                    continue
                own = keys.shard_name(t.run.player_id, board.shards)
                pairs: tuple[str | int, ...] = (
                    int(reply[2]),
                    codec.member(t.run.player_id, int(reply[4])),
                )
                if int(reply[0]) and int(reply[5]):  # moved: where it stood before, too
                    pairs += (int(reply[6]), codec.member(t.run.player_id, int(reply[7])))
                every = keys.shard_keys(
                    board.board_id, t.window, t.period.id, t.segment, board.shards
                )
                for pk in every:
                    if pk.shard != own:
                        calls.append((AHEAD, (pk.public,), (0, 0, *pairs)))
                        slots.append((i, j))
        if not calls:
            return
        with reachable():
            counted = await self.conn.pipeline(calls)
        for (i, j), reply in zip(slots, counted, strict=True):
            held = replies[i][j]
            assert held is not None
            aheads = [int(a) for a in reply[1]]
            rank = int(held[1]) + aheads[0]
            if int(held[0]) and int(held[5]):
                previous = int(held[5]) + aheads[1]
            else:
                previous = rank if int(held[5]) else 0
            replies[i][j] = (held[0], rank, *held[2:5], previous, *held[6:])
