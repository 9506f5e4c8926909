"""The write path: validate, make durable in the log, apply every window in one round trip.

1. Runs are validated (by the caller, with rankd.validation) before anything is written,
   and their run ids checked and claimed (services/run_ids.py): a run_id sent before with
   other content is refused (run_conflict) and goes no further.
2. They are published to the log (a batch as one message; concurrent single submits
   share messages, see group_commit.py) and we wait for the ack. No ack: the
   caller gets Unavailable and nothing reaches Redis.
4. A stalled Redis is cut short on both sides of the log (``answer_timeout_s``): the
   service's Redis clients have no read timeout (a busy Redis is not an error; see
   stores/redis/connection.py), so a paused Redis process would hold every submit for the
   whole pause. When Redis has answered nobody in this process for that long (aio.
   unless_stalled: a Redis that is only slow under load keeps answering others, and its
   submits wait), the caller gets 503: before the log, nothing was accepted; after it, the
   run is logged and the log consumer applies it once Redis answers again.
3. For every run and every window of the board one Lua call raises the entry (or adds to a
   sum) and reads the rank in the same atomic step (plan.py decides, the Redis store
   sends). All calls go in one pipeline: the write pipeline the log consumer uses too
   (services/write_pipeline.py).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from rankd.aio import Stalled, unless_stalled
from rankd.boards import BoardConfig
from rankd.errors import RankdError, Unavailable
from rankd.plan import standing
from rankd.results import Standing
from rankd.runs import Run
from rankd.services.group_commit import GroupCommitter
from rankd.services.leagues import Leagues
from rankd.services.moderation import Moderation
from rankd.services.players import Players
from rankd.services.run_ids import RunIds
from rankd.services.segment_values import SegmentValues
from rankd.services.tournaments import Admitted, Tournaments
from rankd.services.write_pipeline import WritePipeline
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.writes import Writes

T = TypeVar("T")


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
        *,
        answer_timeout_s: float = 5.0,
        tournaments: Tournaments | None = None,
        leagues: Leagues | None = None,
    ) -> None:
        self.answer_timeout_s = answer_timeout_s
        # scheduled boards' joins and caps, decided before logging (services/tournaments.py)
        self.tournaments = tournaments
        # league boards' placements, decided before logging (services/leagues.py)
        self.leagues = leagues
        self.writes = writes
        self.reads = reads
        self.pg = pg
        self.committer = committer
        self.players = players
        self.moderation = moderation
        self.run_ids = run_ids
        self.segment_values = segment_values
        self.pipeline = WritePipeline(writes, writes.marks, reads, pg, moderation)
        # told of every Redis failure after logging: a torn period is repaired at once
        # (services/rebuild/repairs.py; the runtime sets it)
        self.on_busy: Callable[[BaseException], None] = lambda _exc: None

    async def submit(
        self, board: BoardConfig, runs: Sequence[Run]
    ) -> list[list[Standing] | RankdError]:
        """Make ``runs`` durable, apply them, and return each run's standings, or the
        error that refused it (its run_id was sent before with other content, or a segment
        value past the board's bound): such a run is neither logged nor applied."""
        if not runs:
            return []
        try:
            refused, accepted, taken = await self._unless_stalled(self._admit(board, runs))
        except Stalled:
            raise Unavailable(
                f"Redis did not answer within {self.answer_timeout_s:g}s; nothing was "
                "accepted, retry"
            ) from None
        applied: list[list[Standing]] = []
        if accepted:
            try:
                await self.committer.append(board.board_id, accepted, board.generation)
            except BaseException:
                if self.tournaments is not None and taken:
                    await self.tournaments.undo(board, taken)  # nothing was logged
                raise
            try:
                applied = await self._unless_stalled(self.apply(board, accepted, record_holds=True))
            except Stalled:
                self.on_busy(Unavailable("Redis did not answer in time"))
                raise Unavailable(
                    "the run was logged but the boards did not answer within "
                    f"{self.answer_timeout_s:g}s; retrying is safe"
                ) from None
            except Unavailable as exc:
                self.on_busy(exc)
                # The runs are in the log; a retry is harmless and the log consumer heals Redis.
                raise Unavailable(
                    "the run was logged but the boards are unreachable; retrying is safe"
                ) from exc
        results = iter(applied)
        return [next(results) if r is None else r for r in refused]

    async def _unless_stalled(self, work: Coroutine[Any, Any, T]) -> T:
        return await unless_stalled(
            work, self.answer_timeout_s, lambda: self.writes.conn.answered_at
        )

    async def _admit(
        self, board: BoardConfig, runs: Sequence[Run]
    ) -> tuple[list[RankdError | None], list[Run], Admitted]:
        """Each run's refusal (None: accepted), and the accepted runs, holds decided: what
        is checked in Redis before anything is logged."""
        await self.players.fill_segments(board, runs)  # before logging: replays agree
        refused: list[RankdError | None] = list(await self.segment_values.admit(board, runs))
        admitted = [run for run, r in zip(runs, refused, strict=True) if r is None]
        # before logging: conflicting content never enters the log, and an accepted resend
        # carries the first send's ended_at (services/run_ids.py)
        conflicts = iter(await self.run_ids.claim(board.board_id, admitted))
        refused = [next(conflicts) if r is None else r for r in refused]
        accepted = [run for run, r in zip(runs, refused, strict=True) if r is None]
        taken: Admitted = []
        if accepted:
            # the log carries the decision
            accepted = await self.moderation.decide_holds(board, accepted)
            if self.tournaments is not None:
                accepted, taken = await self.tournaments.admit(board, accepted)
            if self.leagues is not None and board.league is not None:
                accepted = await self.leagues.place(board, accepted)
        return refused, accepted, taken

    async def apply(
        self,
        board: BoardConfig,
        runs: Sequence[Run],
        now_ms: int | None = None,
        *,
        record_holds: bool = False,
    ) -> list[list[Standing]]:
        """Apply already-logged runs to Redis (idempotent) and return their standings."""
        # marked: the log consumer skips what the submit path applied (services/applier.py);
        # announce: live streams (services/live.py) re-read the standings this touched
        plans = self.pipeline.plan(board, runs, now_ms, mark=True)
        at = now_ms if now_ms is not None else runs[0].received_at_ms
        written = await self.pipeline.write(
            board, plans, at, announce=True, record_holds=record_holds
        )
        return [
            [standing(board, t, r) for t, r in zip(p, rs, strict=True)]
            for p, rs in zip(written.plans, written.replies, strict=True)
        ]
