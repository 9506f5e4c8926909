"""The write path: validate, make durable in the log, apply every window in one round trip.

1. Runs are validated (by the caller, with rankd.validation) before anything is written,
   and their run ids checked and claimed (services/run_ids.py): a run_id sent before with
   other content is refused (run_conflict) and goes no further.
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
from rankd.errors import RankdError, Unavailable
from rankd.plan import plan, standing
from rankd.results import Standing
from rankd.runs import Run
from rankd.services import late_sums
from rankd.services.group_commit import GroupCommitter
from rankd.services.moderation import Moderation
from rankd.services.players import Players
from rankd.services.run_ids import RunIds
from rankd.services.segment_values import SegmentValues
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.writes import Writes


class Submitter:
    def __init__(
        self,
        writes: Writes,
        reads: Reads,
        pg: PostgresStore,
        committer: GroupCommitter,
        players: Players,
        moderation: Moderation,
        run_ids: RunIds,
        segment_values: SegmentValues,
    ) -> None:
        self.writes = writes
        self.reads = reads
        self.pg = pg
        self.committer = committer
        self.players = players
        self.moderation = moderation
        self.run_ids = run_ids
        self.segment_values = segment_values

    async def submit(
        self, board: BoardConfig, runs: Sequence[Run]
    ) -> list[list[Standing] | RankdError]:
        """Make ``runs`` durable, apply them, and return each run's standings, or the
        error that refused it (its run_id was sent before with other content, or a segment
        value past the board's bound): such a run is neither logged nor applied."""
        if not runs:
            return []
        await self.players.fill_segments(board, runs)  # before logging: replays agree
        refused: list[RankdError | None] = list(await self.segment_values.admit(board, runs))
        admitted = [run for run, r in zip(runs, refused, strict=True) if r is None]
        # before logging: conflicting content never enters the log, and an accepted resend
        # carries the first send's ended_at (services/run_ids.py)
        conflicts = iter(await self.run_ids.claim(board.board_id, admitted))
        refused = [next(conflicts) if r is None else r for r in refused]
        accepted = [run for run, r in zip(runs, refused, strict=True) if r is None]
        applied: list[list[Standing]] = []
        if accepted:
            await self.moderation.decide_holds(board, accepted)  # the log carries the decision
            await self.committer.append(board.board_id, accepted, board.generation)
            try:
                applied = await self.apply(board, accepted, record_holds=True)
            except Unavailable as exc:
                # The runs are in the log; a retry is harmless and the log consumer heals Redis.
                raise Unavailable(
                    "the run was logged but the boards are unreachable; retrying is safe"
                ) from exc
        results = iter(applied)
        return [next(results) if r is None else r for r in refused]

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
        if record_holds and any(t.side == "pending" for p in plans for t in p):
            # a held run follows the decision already made on it (a resent rejected run is
            # applied nowhere), as the log consumer will; the hold rows stay locked until
            # Redis has the run, so a decision made meanwhile settles after it
            async with self.pg.connection() as conn, conn.transaction():
                await self.moderation.follow_decisions(conn, board, plans)
                replies = await self.writes.apply(board, plans, announce=True)
        else:
            # announce: live streams (services/live.py) re-read the standings this touched
            replies = await self.writes.apply(board, plans, announce=True)
        late = [t for p in plans for t in p if t.disposition == "late"]
        if late:  # a sum board's all-time window, for runs older than Redis remembers
            at = now_ms if now_ms is not None else runs[0].received_at_ms
            settled = await late_sums.settle(self.pg, self.writes, self.reads, board, late, at)
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
