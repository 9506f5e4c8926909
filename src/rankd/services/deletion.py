"""Deleting a board and erasing a player (contract v1.2), everywhere: Redis, PostgreSQL,
and the run log, which is the truth every rebuild and replay starts from.

Boards. Every board incarnation has a generation (a PostgreSQL sequence), logged with each
of its runs. Deleting a board removes its config, durable copy, archive and holds in one
transaction that holds the apply lock exclusively (no consumer batch is half applied
meanwhile) and records the deleted generation; the log consumer and every replay apply a
logged run only to the incarnation it was sent to, so old runs never come back and the id
can be reused for a new, empty board. The board's Redis keys are removed in the
background (SCAN and UNLINK in batches, so Redis never blocks for long), twice: the second
time after the other instances' config caches have surely expired (a run they accepted
meanwhile is removed too). Until then the id cannot be created again (503, retry).

Players. An erasure records the log's last sequence for the player, then deletes what
PostgreSQL holds of them (entries, counted runs, holds, profile, ban, archived entries with
the ranks behind them closed up, their runs in parked messages) in the same kind of
transaction, and then their entries on every side of every period in Redis (twice, as for
a ban), and their name and profile copies. The log consumer and
every replay skip a run of an erased player logged at or before that sequence; later runs
are a new player's.

The log's own copies. Runs travel in shared messages (a batch, or concurrent submits
coalesced), so a message cannot simply be dropped. The log scrubber (one instance at a
time, under a PostgreSQL lease) reads the log up to each pending erasure's sequence; for
every message holding an erased player's run it publishes the message's other runs again
(applying is idempotent, so the consumer applying them again changes nothing) and then
deletes the original with JetStream's secure erase (the stored bytes are overwritten, on
every replica); the player's runs leave the run-id registry (services/run_ids.py) too,
which would otherwise remember their player and score for a day. It starts right after
each erasure and again every
``RANKD_ERASURE_SCRUB_INTERVAL_S`` until every erasure is scrubbed; the time taken is one
read of the log (about a million runs a second). Until then the erased runs are in the log
but skipped by every reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from rankd.aio import keep_task, stop_tasks, wait_or_stop
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound, Unavailable
from rankd.periods import PeriodRef
from rankd.runs import decode_batch, encode_message
from rankd.services.corrections import Corrections
from rankd.services.moderation import CATCH_UP_S, Moderation
from rankd.services.names import NameCache
from rankd.services.registry import BoardRegistry
from rankd.services.seasons import SEASON_LOCK
from rankd.stores import deletions as db
from rankd.stores import leagues as leagues_db
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import LogMessage, RunLog

logger = logging.getLogger("rankd.deletion")

# The log scrubber's lease (a PostgreSQL advisory lock key; any constant unique to it).
SCRUB_LOCK = 0x72616E6B79
LOCK_WAIT_S = 10.0  # how long a deletion waits for a season pass or a rebuild to finish
DELETING_FLAG_S = 600  # the "still being removed" flag's expiry, should this process die
MAX_LATER_TASKS = 64  # second sweeps waiting per process; beyond it one runs at once
SCRUB_BATCH = 500  # log messages read per fetch by the scrubber


def _now_ms() -> int:
    return int(time.time() * 1000)


# An erased player's ban row, unbanned by the erasure, is deleted this long after: every
# instance refreshes its ban list from the rows changed since it last looked, so the row
# must outlive any refresh in flight (an instance cut off from PostgreSQL longer keeps the
# player banned in memory until it restarts: harmless for an id that is gone).
BAN_ROW_KEEP_MS = 600_000


class Deletions:
    def __init__(
        self,
        redis: RedisStores,
        pg: PostgresStore,
        runlog: RunLog,
        boards: BoardRegistry,
        moderation: Moderation,
        names: NameCache,
        *,
        settle_s: float,
        scrub_interval_s: float = 60.0,
        run_id_bucket_ms: int = 21_600_000,
    ) -> None:
        """``settle_s``: how long until every instance has surely dropped a deleted
        board's cached config or learnt of an erased player's ban being lifted."""
        self.redis = redis
        self.pg = pg
        self.runlog = runlog
        self.boards = boards
        self.moderation = moderation
        # this process's readers drop their top lists after a deletion or an erasure
        self.invalidations = moderation.invalidations
        self.names = names
        self.settle_s = settle_s
        self.scrub_interval_s = scrub_interval_s
        # how long an erased player's unbanned ban row stays (see scrub_once)
        self.ban_row_keep_ms = BAN_ROW_KEEP_MS
        self.run_id_bucket_ms = max(1, run_id_bucket_ms)  # see services/run_ids.py
        self._later: set[asyncio.Task[None]] = set()
        self._scrub_now = asyncio.Event()
        # one player's entry removed from one period (an admin's correction)
        self.corrections = Corrections(redis, pg, boards, moderation, settle_s=settle_s)

    @contextlib.asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[Conn]:
        """A transaction no season pass, rebuild or consumer batch runs beside."""
        async with self.pg.lease(SEASON_LOCK, wait_s=LOCK_WAIT_S) as lease:
            if lease is None:
                raise Unavailable("a season pass is archiving periods right now; retry shortly")
            async with self.pg.apply_lock(exclusive=True, lock_timeout_s=LOCK_WAIT_S) as conn:
                yield conn

    async def _in_background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        if len(self._later) >= MAX_LATER_TASKS:
            await work  # too many at once: this caller waits for its own
            return
        keep_task(self._later, work, name=name)

    async def close(self) -> list[str]:
        return await stop_tasks(list(self._later), 1.0) + await self.corrections.close()

    # boards

    async def delete_board(self, board_id: str) -> None:
        """Delete a board everywhere (BoardNotFound if there is none); its Redis keys are
        removed in the background, reads answer 404 at once."""
        await self.boards.get(board_id, recent_unknown_ok=False)
        await self.redis.board_keys.set_deleting(board_id, DELETING_FLAG_S)
        try:
            async with self._exclusive() as conn:
                generation = await db.lock_board(conn, board_id)
                if generation is None:
                    raise BoardNotFound(f"board {board_id!r} does not exist")
                await db.delete_board(conn, board_id, generation, _now_ms())
        except BaseException:
            with contextlib.suppress(Unavailable):
                await self.redis.board_keys.set_deleting(board_id, 0)
            raise
        self.boards.forget(board_id)
        await self._in_background(self._sweep_board(board_id), f"delete-board-{board_id}")
        self.invalidations.publish()

    async def _sweep_board(self, board_id: str) -> None:
        try:
            # the settle time counts from the deletion, not from the end of the first
            # sweep: a PUT of the same id waits for both (services/registry.py)
            settled_at = time.monotonic() + self.settle_s
            removed = await self.redis.board_keys.drop_board_keys(board_id)
            await asyncio.sleep(max(0.0, settled_at - time.monotonic()))
            removed += await self.redis.board_keys.drop_board_keys(board_id)
            await self.redis.board_keys.set_deleting(board_id, 0)
            logger.info("board %s deleted: %d Redis keys removed", board_id, removed)
        except Exception as exc:  # the flag expires; a rebuild never restores the board
            logger.warning("removing board %s's keys: %s: %s", board_id, type(exc).__name__, exc)

    # players

    async def erase_player(self, player_id: str) -> None:
        """Erase a player from every store; the log's copies follow (see the module
        docstring)."""
        # the durable copy lists every period they have entries in once the consumer has
        # applied what was logged before now (segments their runs named included); without
        # that list an entry could be missed, so nothing is done until it is there
        if not await self.moderation.caught_up(_now_ms(), CATCH_UP_S):
            raise Unavailable(
                "the log consumer is behind, so the erasure could not find every entry yet; "
                "nothing was changed, retry shortly"
            )
        configs = await self.boards.list()
        live = await self.moderation.live_refs(player_id, configs)
        async with self._exclusive() as conn:
            log_seq = await self.runlog.last_sequence()
            refs = await db.erase_player(conn, player_id, log_seq, _now_ms())
            placed = set(await leagues_db.forget_player(conn, player_id))
        refs |= live
        await self.redis.moves.drop_entries(sorted(refs), [player_id])
        for ref in refs:  # the scheduled occurrences' admission keys too
            if ref.window == "scheduled" and not ref.segment:
                await self.redis.tournaments.forget_player(ref.board, ref.period, player_id)
        await self._leave_leagues(player_id, configs, refs, placed)
        await self.redis.profiles.forget_player(player_id)
        self.names.forget(player_id)
        await self.moderation.bans.refresh()
        await self._in_background(self._sweep_player(player_id, refs), f"erase-{player_id}")
        self._scrub_now.set()
        self.invalidations.publish()

    async def _leave_leagues(
        self,
        player_id: str,
        configs: list[BoardConfig],
        refs: set[PeriodRef],
        placed: set[tuple[str, str]],
    ) -> None:
        """The player leaves every league board's cohorts, queues and tiers in Redis: where
        the durable copy placed them, and in every league period they had an entry in."""
        for config in configs:
            if config.league is not None:
                window = config.league.window
                periods = {p for b, p in placed if b == config.board_id} | {
                    r.period for r in refs if r.board == config.board_id and r.window == window
                }
                await self.redis.leagues.forget_player(
                    config.board_id, config.league.cohort_size, sorted(periods), player_id
                )

    async def _sweep_player(self, player_id: str, refs: set[PeriodRef]) -> None:
        """Again once every instance has applied what it logged before the erasure: a
        submit that wrote Redis after the first sweep is removed too; periods where the
        durable copy holds the id again (a new player's runs) are left alone."""
        try:
            await asyncio.sleep(self.settle_s)
            refs |= await self.moderation.live_refs(player_id, await self.boards.list())
            # under the apply lock: a new run's batch either committed before the read (its
            # period is left alone) or reads its run's mark after the drop, finds none, and
            # writes the entry to Redis itself; between the two it would have been lost.
            # No lock timeout: a background job, it waits out a rebuild rather than give up
            async with self.pg.apply_lock(exclusive=True) as conn:
                cur = await conn.execute(
                    "SELECT board_id, win, period, segment FROM player_best WHERE player_id = %s",
                    (player_id,),
                )
                again = {PeriodRef(*r) for r in await cur.fetchall()}
                await self.redis.moves.drop_entries(sorted(refs - again), [player_id])
        except Exception as exc:
            logger.warning("second sweep of erased %s: %s: %s", player_id, type(exc).__name__, exc)

    # the log's copies

    async def run_scrubber(self, stop: asyncio.Event) -> None:
        """Scrub the log after each erasure, and every ``scrub_interval_s`` while any is
        left (one instance at a time)."""
        while not stop.is_set():
            try:
                await self.scrub_once()
            except Exception as exc:  # the log or PostgreSQL down: the next round retries
                logger.warning("log scrub: %s: %s", type(exc).__name__, exc)
            waiters = [
                asyncio.create_task(self._scrub_now.wait()),
                asyncio.create_task(wait_or_stop(stop, self.scrub_interval_s)),
            ]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            self._scrub_now.clear()

    async def scrub_once(self) -> int:
        """Remove the log's copies of every pending erasure's runs; returns how many log
        messages were erased (0 also when another instance holds the scrubber's lease)."""
        async with self.pg.lease(SCRUB_LOCK) as conn:
            if conn is None:
                return 0
            # an erased player's ban row goes too, once every instance has surely seen the
            # unban the erasure made (each refreshes its ban list every fraction of a second)
            await db.forget_erased_bans(conn, _now_ms() - self.ban_row_keep_ms)
            pending = await db.unscrubbed(conn)
            if not pending:
                return 0
            erased = await self._scrub(pending)
            await db.mark_scrubbed(conn, pending, _now_ms())
            logger.info(
                "log scrubbed for %d erasure(s): %d message(s) erased", len(pending), erased
            )
            return erased

    async def _scrub(self, pending: dict[str, int]) -> int:
        until = min(max(pending.values()), await self.runlog.last_sequence())
        erased = 0
        sub = await self.runlog.read_from(1)
        try:
            while True:
                messages = await sub.fetch(SCRUB_BATCH, 2.0)
                if not messages:
                    break  # past the end (the rest was removed meanwhile)
                for message in messages:
                    if message.seq <= until and await self._scrub_message(message, pending):
                        erased += 1
                await sub.ack(messages)
                if messages[-1].seq >= until:
                    break
        finally:
            await sub.close()
        return erased

    async def _scrub_message(self, message: LogMessage, pending: dict[str, int]) -> bool:
        try:
            board_id, generation, runs = decode_batch(message.data)
        except ValueError:
            return False  # not a run message this version can read; nothing of a player
        if all(message.seq > pending.get(r.player_id, 0) for r in runs):
            return False
        # Which runs stay is decided again here, under the shared apply lock, from the
        # erasures as they are now: a player erased since this round read ``pending`` has
        # runs in this message too, and a copy republished now gets a sequence after their
        # erasure, which every reader would take for a new player's run. An erasure takes
        # the lock exclusively and reads the log's last sequence inside it, so it is
        # either seen here or made after the copy is published (and covers it).
        # kept even if this process stalls: an erasure that took the lock meanwhile would
        # not cover the copy published below (stores/apply_lock.py)
        async with self.pg.apply_lock(exclusive=False, stalled="keep") as conn:
            through = dict(pending)
            for player_id, log_seq in (
                await db.erased_through(conn, {r.player_id for r in runs}, message.seq)
            ).items():
                through[player_id] = max(through.get(player_id, 0), log_seq)
            kept = [r for r in runs if message.seq > through.get(r.player_id, 0)]
            # the run-id registry remembers each run's player and score for a day: not these
            erased = [r for r in runs if message.seq <= through.get(r.player_id, 0)]
            await db.forget_fingerprints(conn, board_id, [(r.run_id, r.player_id) for r in erased])
            if kept:
                # the other runs stay in the log, in a message of their own, before the
                # original goes (publishing again is harmless: applying is idempotent)
                await self.runlog.publish(
                    board_id,
                    encode_message(board_id, kept, generation),
                    f"scrub/{message.seq}",
                )
        await self.redis.admission.forget_run_ids(
            [(board_id, r.received_at_ms // self.run_id_bucket_ms, r.run_id) for r in erased]
        )
        await self.runlog.erase(message.seq)
        return True
