"""Live resharding: a board's ``shards`` changed while it serves (contract v1.3).

A PUT with new ``shards`` on a board with runs records a move (rankd/reshard.py) and
answers at once; from then on every write of the board goes to both layouts
(stores/redis/writes.py apply_other, moderation's moves, the season and rolling jobs),
while reads stay on the old one. One instance at a time (a PostgreSQL lease) drives each
move, a step per pass, and records every step in the board's stored config, so another
instance (or the same one restarted) resumes where it stopped:

1. ``copy``, once every instance has loaded the move (a settle time: the config cache's
   TTL and a second): each period is rebuilt from PostgreSQL into the new layout's keys,
   in (window, period) order, as any rebuild is (the exclusive apply lock: every log
   consumer batch either committed before its snapshot or applies its runs to the new
   keys after the swap; a run the submit path wrote there before the swap lost its mark
   with it, so the consumer applies it again). Progress (entries, and the last period
   built) is recorded after each period. Then the mover waits until the log consumer has
   applied everything logged so far: every run is then in the new layout, by a build, by
   the consumer, or by its submitter's second write. If Redis restarted meanwhile (its
   run id changed) the builds may be gone with it, and the copy starts over.
2. The switch: the new layout is the one served (``drain``); writes still go to both, so
   an instance still serving the old one until its cache expires answers exactly.
3. ``drop``, a settle time later: writes go to the new layout only; a settle time after
   that, the old layout's keys are removed (SCAN and UNLINK), and again a settle time
   later (``sweep``: a request that read the config before may still have written one);
   the move ends.

A PUT of the served shards while the copy runs calls the move off (services/registry.py):
straight to ``drop``, with the layout it was building as the one to remove. A board whose
step fails is tried again after a pause that doubles, up to MAX_REST_S: each build holds
the apply lock, which every log consumer batch waits for.

A period created after the copy's list was taken has had every run written to both layouts
from its first, so nothing needs building for it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import replace
from typing import Any

from rankd import metrics
from rankd.aio import wait_or_stop
from rankd.boards import BoardConfig
from rankd.logs import Repeats
from rankd.placement import Layout, base_of
from rankd.services.rebuild import Rebuilder
from rankd.stores import apply_lock, reshards
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis import keys
from rankd.stores.redis.connection import reachable
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import RunLog

logger = logging.getLogger("rankd.resharding")

# How often every instance looks for moves to drive (one query when there are none).
PASS_S = 1.0
# The longest pause before a board whose move failed is tried again.
MAX_REST_S = 60.0
# A pass that keeps failing the same way is logged this often.
WARN_EVERY_S = 30.0
# One instance drives the moves at a time (a session advisory lock: "rankr").
RESHARD_LOCK = 0x72616E6B72
# How long the mover waits at most, in one pass, for the log consumer to apply what was
# logged before the switch; the next pass waits again.
CATCH_UP_WAIT_S = 60.0
CATCH_UP_POLL_S = 0.2  # each look asks the log for its consumer's state
# Keys removed per UNLINK when the old layout goes.
UNLINK_BATCH = 500

_TAG = re.compile(r"lb:\{(?P<tag>[^{}]+)\}")
_SHARD = re.compile(r"#(\d+)$")


class Resharding:
    def __init__(
        self,
        pg: PostgresStore,
        redis: RedisStores,
        rebuilder: Rebuilder,
        runlog: RunLog,
        durable: str,
        *,
        settle_s: float,
    ) -> None:
        """``settle_s``: how long until every instance has surely reloaded a board's
        config (the config cache's TTL and a second)."""
        self.pg = pg
        self.redis = redis
        self.rebuilder = rebuilder
        self.runlog = runlog
        self.durable = durable
        self.settle_ms = int(settle_s * 1000)
        # boards whose last step failed: the pause before the next try, and until when
        # (entries only for moves under way, which an admin starts one at a time per board)
        self._rests: dict[str, float] = {}
        self._resting: dict[str, float] = {}

    async def run_forever(self, interval_s: float, stop: asyncio.Event) -> None:
        """A pass every ``interval_s`` until ``stop`` is set; a failing pass (PostgreSQL
        down, say) says so once every WARN_EVERY_S, with how many failed meanwhile."""
        repeats = Repeats(WARN_EVERY_S, max_kinds=16)
        while not await wait_or_stop(stop, interval_s):
            try:
                await self.run_pass()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                kind = f"{type(exc).__name__}: {exc}"
                held = repeats.allow(kind)
                if held is not None:
                    logger.warning("resharding: %s (and %d more like it)", kind, held)

    async def run_pass(self) -> int:
        """Take every move under way as far as it can go now (if this instance holds the
        lease); returns how many moves are still under way."""
        moving = await reshards.moving(self.pg)
        if not moving:
            return 0
        async with self.pg.lease(RESHARD_LOCK) as held:
            if held is None:
                return len(moving)
            left, failed = 0, None
            now = time.monotonic()
            for gone in set(self._rests) - set(moving):  # ended or deleted meanwhile
                self._rests.pop(gone, None)
                self._resting.pop(gone, None)
            for board_id in moving:
                if self._resting.get(board_id, 0.0) > now:
                    left += 1
                    continue
                try:  # one board's failing move holds up no other board's
                    done = await self.advance(board_id, held)
                except Exception as exc:
                    # tried again after a pause that doubles: each build of a period holds
                    # the apply lock, so a move failing every second would stall the log
                    # consumer of every board
                    pause = min(MAX_REST_S, 2 * self._rests.get(board_id, PASS_S))
                    self._rests[board_id] = pause
                    self._resting[board_id] = now + pause
                    left, failed = left + 1, exc
                    continue
                self._rests.pop(board_id, None)
                self._resting.pop(board_id, None)
                left += not done
            if failed is not None:
                raise failed
            return left

    async def advance(self, board_id: str, held: Conn) -> bool:
        """Steps of one board's move while each is due; True once the move has ended.
        ``held``: the lease's connection, every step is recorded on it."""
        while True:
            config = await self.pg.get_board(board_id)
            move = None if config is None else config.reshard
            if config is None or move is None:
                return True
            now_ms = await reshards.clock_ms(self.pg, held)
            if now_ms < move.since_ms + self.settle_ms:
                return False  # some instance may not know this phase yet
            if move.phase == "copy":
                if not await self._copy(config, held):
                    return False
            elif move.phase == "drain":
                then = replace(move, phase="drop", since_ms=now_ms)
                await reshards.step(self.pg, config, then, conn=held)
            elif move.phase == "drop":
                # nobody writes the other layout now: its keys go, and once more a settle
                # time later (a request that began before this phase may still write one)
                removed = await self._drop(board_id, move.other)
                then = replace(move, phase="sweep", since_ms=await reshards.clock_ms(self.pg, held))
                await reshards.step(self.pg, config, then, conn=held)
                logger.info("%s: %d keys of the layout left behind removed", board_id, removed)
            else:
                await self._drop(board_id, move.other)
                if await reshards.step(self.pg, config, None, conn=held):
                    logger.info("%s: served from %d shards", board_id, int(config.shards))

    async def _copy(self, config: BoardConfig, held: Conn) -> bool:
        """Build the new layout period by period, wait for the log consumer, then switch;
        False if it could not finish in this pass (recorded progress is kept)."""
        move = config.reshard
        assert move is not None
        redis = await self.redis.positions.server_run_id()
        if move.redis != redis:  # a start, or Redis restarted: every period (again)
            move = replace(move, redis=redis, done=0, cursor="", total=0)
            if not await reshards.step(self.pg, config, move, conn=held):
                return False
            config = replace(config, reshard=move)
        # a barrier: every log consumer batch that took the apply lock before this has
        # committed (its new periods are listed below); every later one checks the layout
        # under the lock (services/applier.py _still_wanted) and writes both
        await apply_lock.turn(held, exclusive=True)
        listed = await reshards.periods(self.pg, config.board_id)
        if move.total == 0:
            move = replace(move, total=sum(n for _, _, n in listed))
        target = replace(config, shards=move.other, reshard=None)
        started, moved = time.perf_counter(), 0
        for window, period, entries in listed:
            at = f"{window}/{period}"
            if move.cursor and at <= move.cursor:
                continue
            await self.rebuilder.rebuild(
                config.board_id,
                window,
                period,
                fresh_config=target,
                serve_meanwhile=True,
                standings_only=True,
            )
            metrics.RESHARD_MOVED.inc(entries)
            moved += entries
            move = replace(move, cursor=at, done=min(move.total, move.done + entries))
            if not await reshards.step(self.pg, config, move, conn=held):
                return False  # deleted, or another driver went on
            config = replace(config, reshard=move)
        if moved:
            seconds = time.perf_counter() - started
            logger.info(
                "%s: %d entries built into %d shards in %.2fs (%.0f entries/s)",
                config.board_id,
                moved,
                int(move.other),
                seconds,
                moved / seconds if seconds else 0.0,
            )
        if not await self._caught_up():
            return False
        if await self.redis.positions.server_run_id() != redis:
            return False  # restarted under the copy: the next pass starts it over
        # the switch: reads from the new layout; the old one keeps taking writes meanwhile
        old = Layout(config.shards, base_of(config.shards))
        drain = replace(
            move, phase="drain", other=old, since_ms=await reshards.clock_ms(self.pg, held)
        )
        return await reshards.step(self.pg, config, drain, served=move.other, conn=held)

    async def _caught_up(self) -> bool:
        """Whether the log consumer has applied everything logged until now (waiting up
        to CATCH_UP_WAIT_S)."""
        last = await self.runlog.last_sequence()
        deadline = time.monotonic() + CATCH_UP_WAIT_S
        while True:
            lag = await self.runlog.lag(self.durable)
            if lag.caught_up or lag.ack_floor >= last:
                return True
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(CATCH_UP_POLL_S)

    async def _drop(self, board_id: str, old: int) -> int:
        """Remove every key of the layout ``old`` of the board (SCAN, UNLINK in batches):
        its standings and their side keys, of every period and segment."""
        # a barrier: a rebuild that read the config before this phase (it may write the
        # old layout too) has ended; every later one knows the phase (the settle time)
        async with self.pg.connection() as conn:
            await apply_lock.turn(conn, exclusive=True)
        names = range(base_of(old), base_of(old) + int(old)) if old > 1 else None
        removed = 0
        client = self.redis.conn.client
        for pattern in keys.board_patterns(board_id)[:2]:  # the standings' keys
            found: list[Any] = []
            with reachable():
                async for key in client.scan_iter(match=pattern, count=1000):
                    if in_layout(key, names):
                        found.append(key)
                    if len(found) >= UNLINK_BATCH:
                        removed += int(await client.unlink(*found))
                        found.clear()
                if found:
                    removed += int(await client.unlink(*found))
        return removed


def in_layout(key: bytes | str, names: range | None) -> bool:
    """Whether ``key`` is a standings key of the layout whose shard names are ``names``
    (None: the unsharded one, whose tags name no shard)."""
    text = key.decode() if isinstance(key, bytes) else key
    match = _TAG.match(text)
    if match is None or keys.period_of(match[0]) is None:
        return False  # e.g. a league's keys, which no layout owns
    shard = _SHARD.search(match["tag"])
    if shard is None:
        return names is None
    return names is not None and int(shard[1]) in names
