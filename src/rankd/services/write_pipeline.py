"""The one write pipeline: how planned runs reach Redis, for the submit path and the log
consumer (and replays) alike.

1. Plan (plan.py) with moderation as an input: this instance's ``Visibility`` snapshot
   sends a banned player's targets to :shadow, and a run's held windows (decided before
   logging, services/moderation.py) send those targets to :pending. Targets are immutable.
2. Follow the review decisions on held targets (``Moderation.follow_decisions``, which
   records the holds and returns new targets: approved ones public, rejected ones closed),
   inside a PostgreSQL transaction that keeps the hold rows locked until Redis has them.
3. Send every sendable target's script in one pipeline (stores/redis/writes.py). The log
   consumer first skips the targets the submit path marked as applied (waiting briefly
   for the marks of runs received just now), so it never writes a run before its submitter.
4. Settle late runs of a sum board's all-time window in PostgreSQL, then Redis
   (services/late_sums.py).

The two callers differ only in their transaction. The submit path (``conn`` None) opens one
for the decisions when a target is held, and settles late runs under its own share of the
apply lock; the consumer passes its batch's transaction (holding the apply lock), which
both steps join, and writes the durable copy itself (services/applier.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from rankd import metrics
from rankd.boards import BoardConfig
from rankd.plan import Reply, Target, Visibility, plan
from rankd.runs import Run
from rankd.services import late_sums
from rankd.services.moderation import Moderation
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.marks import Marks
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.writes import Writes

# how long after its receipt a run's log store time is believed: a publish's timeout, with
# room (a log server whose clock runs far ahead cannot hold the consumer up for long)
LOGGED_WITHIN_MS = 10_000


@dataclass(frozen=True, slots=True)
class Written:
    """What a write did: the targets as written (after the review decisions) and one reply
    per target, shaped alike (None: nothing sent, or the submit path had applied it)."""

    plans: list[list[Target]]
    replies: list[list[Reply | None]]


class WritePipeline:
    def __init__(
        self,
        writes: Writes,
        marks: Marks,
        reads: Reads,
        pg: PostgresStore,
        moderation: Moderation,
    ) -> None:
        self.writes = writes
        self.marks = marks
        self.reads = reads
        self.pg = pg
        self.moderation = moderation

    def visibility(self) -> Visibility:
        return self.moderation.visibility()

    def plan(
        self,
        board: BoardConfig,
        runs: Sequence[Run],
        now_ms: int | None = None,
        *,
        seen: Visibility | None = None,
        mark: bool = False,
    ) -> list[list[Target]]:
        """Each run's targets, as ``seen`` (default: this instance's view now) hides them;
        ``mark``: the submit path's, which the log consumer skips."""
        seen = self.visibility() if seen is None else seen
        return [plan(board, run, now_ms, seen, mark=mark) for run in runs]

    async def write(
        self,
        board: BoardConfig,
        plans: list[list[Target]],
        now_ms: int,
        *,
        conn: Conn | None = None,
        announce: bool = False,
        record_holds: bool = True,
        mark_wait_ms: int | None = None,
    ) -> Written:
        """Write ``plans`` (see the module docstring); idempotent.

        ``conn``: the caller's transaction, holding the apply lock (the log consumer and
        replays); the review decisions and late runs join it. Without it (the submit path)
        the decisions get their own transaction, only when a target is held and
        ``record_holds``. ``announce``: the pipeline ends with a change notice for live
        streams (services/live.py). ``mark_wait_ms`` (the log consumer's, with ``conn``):
        skip the targets the submit path marked as applied, waiting up to this long for the
        marks of runs received that recently. ``now_ms``: when late runs are counted.
        """
        marked: set[int] = set()  # id() of the targets the submit path applied
        if conn is not None:
            plans = await self.moderation.follow_decisions(conn, board, plans)
            if mark_wait_ms is not None:
                marked = await self._marked(board, plans, mark_wait_ms)
            replies = await self._send(board, plans, marked, announce)
            await self.writes.apply_other(board, plans, consumer=True)
        elif record_holds and any(t.side == "pending" for p in plans for t in p):
            # a held run follows the decision already made on it (a resent rejected run is
            # applied nowhere), as the log consumer will; the hold rows stay locked until
            # Redis has the run, so a decision made meanwhile settles after it
            async with self.pg.request_slot(), self.pg.connection() as own, own.transaction():
                plans = await self.moderation.follow_decisions(own, board, plans)
                replies = await self._send(board, plans, marked, announce)
                await self.writes.apply_other(board, plans, consumer=False)
        else:
            replies = await self._send(board, plans, marked, announce)
            await self.writes.apply_other(board, plans, consumer=False)
        # a sum board's all-time window, for runs older than Redis remembers
        late = [
            (i, j)
            for i, p in enumerate(plans)
            for j, t in enumerate(p)
            if t.disposition == "late" and id(t) not in marked
        ]
        if late:
            settled = await late_sums.settle(
                self.pg,
                self.writes,
                self.reads,
                board,
                [plans[i][j] for i, j in late],
                now_ms,
                conn,
            )
            for (i, j), reply in zip(late, settled, strict=True):
                replies[i][j] = reply
        return Written(plans, replies)

    async def _send(
        self, board: BoardConfig, plans: list[list[Target]], marked: set[int], announce: bool
    ) -> list[list[Reply | None]]:
        """Every sendable target's script but the ``marked`` ones, in one pipeline."""
        if not marked:
            return await self.writes.apply(board, plans, announce=announce)
        sent = [[t for t in p if id(t) not in marked] for p in plans]
        replies = iter(
            [r for rs in await self.writes.apply(board, sent, announce=announce) for r in rs]
        )
        return [[None if id(t) in marked else next(replies) for t in p] for p in plans]

    async def _marked(
        self, board: BoardConfig, plans: list[list[Target]], wait_ms: int
    ) -> set[int]:
        """The targets (by id) the submit path marked as applied; for runs received or
        logged less than ``wait_ms`` ago, wait for their marks (polling) until then. The
        submitter writes Redis once the log has its run: from its receipt, a publish slower
        than ``wait_ms`` (a log electing its leader) let the consumer write first, and the
        submitter's answer then said its run changed nothing."""
        # late runs too: the submit path counted them in PostgreSQL and Redis, under a mark
        waiting = [t for p in plans for t in p if t.disposition in ("apply", "late")]
        marked: set[int] = set()
        delay = 0.005
        while waiting:
            found = await self.marks.find_marks(board, waiting)
            marked.update(id(t) for t, m in zip(waiting, found, strict=True) if m)
            now_ms = int(time.time() * 1000)
            waiting = [
                t
                for t, m in zip(waiting, found, strict=True)
                if not m and _since_ms(t.run) > now_ms - wait_ms
            ]
            if waiting:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.1)
        if marked:
            metrics.TARGETS_ALREADY_APPLIED.inc(len(marked))
        return marked


def _since_ms(run: Run) -> int:
    """From when the consumer waits for ``run``'s mark: its receipt, or its message's store
    time if later (within LOGGED_WITHIN_MS)."""
    return max(run.received_at_ms, min(run.logged_ms, run.received_at_ms + LOGGED_WITHIN_MS))
