"""The write path: validate, make durable in the log, apply every window in one round trip.

1. Runs are validated (by the caller, with rankd.validation) before anything is written.
2. They are published to the log (a batch as one message; concurrent single submits
   share messages, see group_commit.py) and we wait for the ack. No ack: the
   caller gets Unavailable and nothing reaches Redis.
3. For every run and every window of the board one Lua call raises the entry (or adds to a
   sum) and reads the rank in the same atomic step (plan.py decides, the Redis store
   sends). All calls go in one pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.plan import plan, standing
from rankd.results import Standing
from rankd.runs import Run
from rankd.services import late_sums
from rankd.services.group_commit import GroupCommitter
from rankd.services.moderation import Moderation
from rankd.services.players import Players
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis_store import RedisStore


class Submitter:
    def __init__(
        self,
        store: RedisStore,
        pg: PostgresStore,
        log: GroupCommitter,
        players: Players,
        moderation: Moderation,
        first_receipt_keep_s: float = 120.0,
    ) -> None:
        self.store = store
        self.pg = pg
        self.log = log
        self.players = players
        self.moderation = moderation
        self.first_receipt_keep_ms = int(first_receipt_keep_s * 1000)

    async def submit(self, board: BoardConfig, runs: Sequence[Run]) -> list[list[Standing]]:
        """Make ``runs`` durable, apply them, and return each run's standings."""
        if not runs:
            return []
        await self.players.fill_segments(board, runs)  # before logging: replays agree
        await self._first_receipts(board, runs)
        await self.moderation.decide_holds(board, runs)  # the log carries the decision
        await self.log.append(board.board_id, runs, board.generation)
        try:
            return await self.apply(board, runs, record_holds=True)
        except Unavailable as exc:
            # The runs are in the log; a retry is harmless and the log consumer heals Redis.
            raise Unavailable(
                "the run was logged but the boards are unreachable; retrying is safe"
            ) from exc

    async def _first_receipts(self, board: BoardConfig, runs: Sequence[Run]) -> None:
        """A run sent without ended_at ends when it was first received: a resend (within
        ``first_receipt_keep_s``, like the log's own duplicate window) keeps that time, so
        every window reports the same entry whichever sending is applied."""
        defaulted = [r for r in runs if not r.ended_given]
        if not defaulted or self.first_receipt_keep_ms <= 0:
            return
        firsts = await self.store.first_receipts(
            board.board_id,
            [(r.player_id, r.run_id, r.ended_at_ms) for r in defaulted],
            self.first_receipt_keep_ms,
        )
        for run, first in zip(defaulted, firsts, strict=True):
            run.ended_at_ms = first

    async def apply(
        self,
        board: BoardConfig,
        runs: Sequence[Run],
        now_ms: int | None = None,
        *,
        record_holds: bool = False,
    ) -> list[list[Standing]]:
        """Apply already-logged runs to Redis (idempotent) and return their standings."""
        plans = [plan(board, run, now_ms) for run in runs]
        for targets in plans:
            for t in targets:
                t.mark = True  # the log consumer skips what this marks (services/applier.py)
        self.moderation.route(plans)
        # announce: live streams (services/live.py) re-read the standings this touched
        replies = await self.store.apply(board, plans, announce=True)
        if record_holds:
            await self.moderation.record_holds(board, plans)
        late = [t for p in plans for t in p if t.disposition == "late"]
        if late:  # a sum board's all-time window, for runs older than Redis remembers
            at = now_ms if now_ms is not None else runs[0].received_at_ms
            settled = await late_sums.settle(self.pg, self.store, board, late, at)
            replies = [
                [
                    settled.get(id(t)) if t.disposition == "late" else r
                    for t, r in zip(p, rs, strict=True)
                ]
                for p, rs in zip(plans, replies, strict=True)
            ]
        return [
            [standing(board, t, r) for t, r in zip(p, rs, strict=True)]
            for p, rs in zip(plans, replies, strict=True)
        ]
