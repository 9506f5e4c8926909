"""Restore a Redis that is not the process the boards were verified on: replay the log's
tail when it kept its data, rebuild from PostgreSQL only when it did not.

What is recorded. The shared log consumer acks a message only after applying it to Redis
(or finding the submit path's mark, which the same script call wrote beside the entry, on
the same node), so its ack floor F means every logged run up to F is in Redis. Every few
seconds each instance writes F into a small hash on every primary (log_position.lua,
stores/redis/keys.py LOG_POSITION), in one script call that first reads the node's own run
id from INFO and writes nothing unless that run id is one the boards were verified on.

Why a recorded position can be trusted. One Redis node's AOF, and the replication stream a
replica receives, are prefixes of the commands the node executed. A node restarted from its
AOF, or a replica promoted after a failover, that holds position F also holds every write
the node executed before F was written, which includes every run up to F. The identity
check closes the race where an instance writes F onto a node that restarted (or was
promoted) after the runs were applied but before anyone noticed: that node's run id is not
the verified one, so the write is refused. The verified run id itself is only set once a
restore has finished, so a position on a verified node always covers what it claims: every
run logged before the node started is restored by the replay (or the rebuild) that
verified it, and every later one was applied to that node.

What a restart costs. If every primary's position is readable and the log still holds the
message after the smallest one, the log is replayed from there (the same idempotent apply
as ``rankd replay``: bans, holds, sum boards' counted runs, periods indexes), through the
log's last sequence as of the start. Writes that are not in the log are redone too: the
names and profile segments of players written in PostgreSQL since the position (less a
minute, for the Redis write that follows the commit and for clocks) are copied again, and
the run-id registries disarmed as a rebuild does. Otherwise (a wiped node, an AOF turned
off, a tail past the log's retention, or a ban, hold decision, board deletion or erasure
recorded in PostgreSQL after the position was written, whose Redis write may be in the
AOF's lost last second) everything is rebuilt from PostgreSQL as before. /readyz says
which, and how far it has got.

Not covered by either path, as before: a segment dimension's value count (a few values may
pass the bound after a loss, see services/segment_values.py) and rate-limit counters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rankd.errors import LogUnavailable
from rankd.services.applier import Applier
from rankd.services.consumer import DURABLE
from rankd.services.rebuild.rebuilder import Rebuilder
from rankd.services.registry import BoardRegistry
from rankd.services.replay import replay
from rankd.stores import moderation as moderation_db
from rankd.stores.postgres import PostgresStore
from rankd.stores.rebuild import players as rebuild_players
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import RunLog

logger = logging.getLogger("rankd.restart")

# How far before a recorded position a PostgreSQL-only change (a ban, ...) still forces a
# full rebuild: the Redis write follows the PostgreSQL commit by a round trip or two, and
# clocks of several instances differ a little.
CHANGE_MARGIN_MS = 60_000
# A tail replay that failed this many times running gives way to a rebuild from PostgreSQL.
MAX_TAIL_FAILURES = 2

Stage = Callable[[str], None]


@dataclass
class RestoreReport:
    how: Literal["tail", "rebuild", "catch-up"]
    reason: str = ""  # why a rebuild, when it is one
    from_sequence: int = 0  # tail: the first sequence replayed
    through: int = 0  # tail: the last
    messages: int = 0
    players: int = 0  # tail: names and profiles copied again
    members: int = 0  # rebuild: members loaded
    seconds: float = 0.0

    def describe(self) -> str:
        if self.how != "rebuild":
            return (
                f"{self.how} replay from sequence {self.from_sequence} through {self.through}:"
                f" {self.messages} messages, {self.players} players' names in {self.seconds:.1f}s"
            )
        return (
            f"rebuild from PostgreSQL ({self.reason}): {self.members} members"
            f" in {self.seconds:.1f}s"
        )


class Restorer:
    """``applier`` applies everything to Redis (no trusted marks: a mark the restarted
    node kept says nothing about the runs it lost after it)."""

    def __init__(
        self,
        redis: RedisStores,
        pg: PostgresStore,
        runlog: RunLog,
        rebuilder: Rebuilder,
        applier: Applier,
        boards: BoardRegistry,
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.runlog = runlog
        self.rebuilder = rebuilder
        self.applier = applier
        self.boards = boards
        self.last: RestoreReport | None = None  # the last restore, for /readyz
        self.change_margin_ms = CHANGE_MARGIN_MS
        # tail replays failed in a row, and the last one's error (see restore)
        self.tail_failures = 0
        self.tail_error = ""

    async def tail_start(self) -> tuple[int | None, int, str]:
        """The first log sequence to replay and when the position was recorded (ms), or
        None and why the tail cannot do."""
        positions = await self.redis.positions.read_positions()
        if not positions or any(p is None for p in positions):
            return None, 0, "no recorded log position (a new or wiped Redis, or no AOF)"
        seq = min(p[0] for p in positions if p is not None)
        at_ms = min(p[1] for p in positions if p is not None)
        first = await self.runlog.first_sequence()
        if seq + 1 < first:
            return None, 0, f"the log no longer holds sequence {seq + 1} (it starts at {first})"
        async with self.pg.connection() as conn:
            changed = await moderation_db.changed_since(conn, at_ms - self.change_margin_ms)
        if changed:
            return None, 0, f"{', '.join(changed)} since the recorded position"
        return seq + 1, at_ms, ""

    async def restore(self, stage: Stage) -> RestoreReport | None:
        """Restore Redis if it is not the verified process; None when it is."""
        started = time.perf_counter()
        run_id = await self.redis.positions.server_run_id()
        replaced = await self.redis.positions.verified_id()
        if replaced == run_id:
            return None
        start, at_ms, reason = await self.tail_start()
        if start is not None and self.tail_failures >= MAX_TAIL_FAILURES:
            # a tail that keeps failing must not keep the service waiting: PostgreSQL holds
            # every applied run, and the log's later ones come through the consumer
            start, reason = (
                None,
                (f"the log's tail failed to apply {self.tail_failures} times: {self.tail_error}"),
            )
        await self._note_start(replaced, start, at_ms)
        if start is None:
            report = await self._rebuild(reason, stage)
            self.tail_failures = 0
        else:
            try:
                report = await self._tail(start, at_ms, run_id, stage)
            except Exception as exc:
                self.tail_failures += 1
                self.tail_error = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                logger.warning(
                    "tail replay failed (%d of %d before a rebuild instead): %s",
                    self.tail_failures, MAX_TAIL_FAILURES, self.tail_error,
                )  # fmt: skip
                raise
            self.tail_failures = 0
        report.seconds = time.perf_counter() - started
        self.last = report
        logger.warning("redis restored: %s", report.describe())
        return report

    async def _note_start(self, replaced: str | None, start: int | None, at_ms: int) -> None:
        """Note, for the node this restore replaces, what an instance that kept writing to
        it meanwhile must replay once it finds this one (catch_up): the tail's start, or
        for a rebuild what the consumer had not acked yet (PostgreSQL holds the rest)."""
        if replaced is None:  # never verified: nobody wrote to a node it had verified
            return
        if start is None:
            try:
                start = (await self.runlog.lag(DURABLE)).ack_floor + 1
            except LogUnavailable:  # noted nowhere: such an instance rebuilds instead
                return
            at_ms = int(time.time() * 1000)
        await self.redis.positions.mark_restored_from(replaced, start, at_ms)

    async def catch_up(self, replaced: str, stage: Stage) -> RestoreReport:
        """This instance finds a verified Redis other than ``replaced``, the node it last
        wrote to: a Sentinel primary cut off by a partition, say, which took its writes
        (and its consumer's acks) until it learnt it had been replaced, while another
        instance restored this one. What it wrote there since that restore began is
        replayed here, names and profiles copied again, as a tail restore does; a rebuild
        when that start is unknown or gone from the log, or moderation changed since."""
        started = time.perf_counter()
        noted = await self.redis.positions.restored_from(replaced)
        reason = "no note of where the restore replacing it began"
        if noted is not None:
            start, at_ms = noted
            first = await self.runlog.first_sequence()
            async with self.pg.connection() as conn:
                changed = await moderation_db.changed_since(conn, at_ms - self.change_margin_ms)
            if start < first:
                reason = f"the log no longer holds sequence {start} (it starts at {first})"
            elif changed:
                reason = f"{', '.join(changed)} since that restore began"
            else:
                reason = ""
        if reason:
            report = await self._rebuild(reason, stage, when="always")
        else:
            report = await self._tail(start, at_ms, None, stage)
            report.how = "catch-up"
        report.seconds = time.perf_counter() - started
        logger.warning("redis caught up: %s", report.describe())
        return report

    async def _rebuild(
        self, reason: str, stage: Stage, when: Literal["always", "redis_changed"] = "redis_changed"
    ) -> RestoreReport:
        report = RestoreReport("rebuild", reason)
        stage(f"rebuild from PostgreSQL ({reason})")

        def progress(members: int) -> None:
            report.members += members
            stage(f"rebuild from PostgreSQL ({reason}): {report.members} members loaded")

        await self.rebuilder.rebuild(when=when, progress=progress)
        return report

    async def _tail(
        self, start: int, at_ms: int, run_id: str | None, stage: Stage
    ) -> RestoreReport:
        """Replay from ``start``; verified as ``run_id`` after, unless None or it changed."""
        report = RestoreReport("tail", from_sequence=start)
        last = await self.runlog.last_sequence()
        report.through = last
        stage(f"tail replay from sequence {start}: restoring names and profiles")
        self.redis.index.forget()  # the periods indexes' memo is of the node before
        # not in the log: a restarted registry may lack its last claims (restored from
        # PostgreSQL and the log on each board's next submit), and the names and profiles
        # written since the position (PostgreSQL first, Redis after) are copied again
        await self.redis.admission.disarm_run_ids([b.board_id for b in await self.boards.list()])
        self.rebuilder.restoring_profiles = True
        try:
            async with self.pg.connection() as conn:
                changed = await rebuild_players.players_changed_since(
                    conn, at_ms - self.change_margin_ms
                )
            await self.redis.profiles.patch_players(changed)
        finally:
            self.rebuilder.restoring_profiles = False
        report.players = len(changed)

        def progress(messages: int) -> None:
            report.messages += messages
            stage(f"tail replay from sequence {start}: at {start + report.messages - 1} of {last}")

        stage(f"tail replay from sequence {start}: at {start - 1} of {last}")
        done = await replay(self.runlog, self.applier, start, progress)
        report.through = done.last_sequence
        # verified only if no restart fell within the replay (the watch starts over if so)
        if run_id is not None and await self.redis.positions.server_run_id() == run_id:
            await self.redis.positions.mark_verified(run_id)
        return report
