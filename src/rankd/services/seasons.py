"""Seasons: freeze closed periods into the archive, then let them leave Redis.

A daily, weekly or monthly period lives three lives:

* ``open`` until its end plus ``grace_seconds``: runs land in it, reads come from Redis;
* ``closed`` after that: the season job freezes its complete final standings (rank,
  player, score, achieved time, name) into the archive in PostgreSQL, streamed from Redis
  in pages into ``COPY`` (from ``player_best`` if the Redis key is gone); reads still come
  from Redis;
* ``archived`` once ``retention_days`` (per window) have passed after its grace (0: in the
  same pass as the freeze): the job marks it archived, reads turn to the archive, and it
  UNLINKs its keys once every rebuild that did not see the mark has swapped its keys in.

The job owns expiry: period keys carry no TTL. A key therefore never leaves Redis before
its period is archived, whatever the job's downtime or the retention, and a change of
``retention_days`` or ``grace_seconds`` applies to periods that already exist: every pass
reads the current board configs. A grace raised past ``now`` reopens a frozen period (the
archive is dropped; a period that had left Redis is restored into it from PostgreSQL).

One instance runs a pass at a time, under a PostgreSQL session advisory lock held on a
connection of its own (the lease): the archive is written on that connection, so work
commits only while the lease is held, and the lock dies with its session, so when the
holder dies the next instance takes over. Each period is archived once (its
``period_archives`` row is the proof). A period is frozen only once every run received
before its grace ended has been applied (the log consumer's ack floor) and a short settle
time has passed, so no accepted run misses its archive.

All decisions take ``now_ms`` (injected: tests cross day, week and month without sleeping).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Literal

from rankd import metrics
from rankd.aio import wait_or_stop
from rankd.boards import BoardConfig
from rankd.codec import Codec
from rankd.periods import SPAN_MS, Period, PeriodRef
from rankd.plan import expires_at_ms
from rankd.services import rolling, webhooks
from rankd.services.leagues import Leagues
from rankd.services.rebuild import Rebuilder
from rankd.services.registry import BoardRegistry
from rankd.stores import apply_lock, archive_job, fingerprints
from rankd.stores import leagues as leagues_db
from rankd.stores.archive import ArchiveState, FrozenEntry
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.seasons import SeasonKeys

logger = logging.getLogger("rankd.seasons")

# The season job's lease (a PostgreSQL advisory lock key; any constant unique to it).
SEASON_LOCK = 0x72616E6B73

Action = Literal["keep", "wait", "freeze", "expire", "thaw"]
Clock = Callable[[], int]
Progress = Callable[[int], None]


def wall_clock() -> int:
    return int(time.time() * 1000)


def closes_at_ms(board: BoardConfig, period: Period) -> int | None:
    """When a period stops taking runs (its end plus grace, or earlier when an admin closed
    it); None: never (all-time)."""
    return board.closes_at_ms(period)


def decide(
    board: BoardConfig,
    period: Period,
    state: ArchiveState | None,
    now_ms: int,
    settle_ms: int,
    applied_through_ms: int | None,
) -> Action:
    """What the season job does to one period at ``now_ms``, by the board's current config.

    ``state``: the period's archive (None: not frozen). ``applied_through_ms``: the receipt
    time of the oldest logged run not yet applied (None: all applied).

    * ``freeze``: past grace and settle, and every run received before the grace ended
      has been applied;
    * ``wait``: past grace and settle, but runs received in time are still being applied;
    * ``expire``: frozen, still in Redis, and its retention has passed;
    * ``thaw``: frozen, but open again (its grace was raised);
    * ``keep``: nothing to do (open, archived, or within retention).
    """
    closes = closes_at_ms(board, period)
    if closes is None:
        return "keep"
    if state is not None:
        if now_ms < closes:
            return "thaw"
        expires = expires_at_ms(board, period)
        assert expires is not None
        return "expire" if not state.archived and now_ms >= expires else "keep"
    if now_ms < closes + settle_ms:
        return "keep"
    if applied_through_ms is not None and applied_through_ms < closes:
        return "wait"
    return "freeze"


def codec_for(board: BoardConfig, window: str) -> Codec:
    """The window's codec, also for a window since removed from the board's config (its
    periods still freeze and expire)."""
    codec = board.codecs.get(window)
    return codec or Codec.create(board.max_score, board.order, SPAN_MS[window])


@dataclass
class SeasonReport:
    """What one pass did."""

    lease: bool = True  # False: another instance holds the lease; nothing was done
    frozen: int = 0  # periods frozen into the archive
    entries: int = 0  # entries archived
    archived: int = 0  # periods that left Redis
    thawed: int = 0  # frozen periods reopened by a raised grace
    waiting: int = 0  # closed periods waiting for the log consumer
    rolled: int = 0  # rolling-7d periods a day left (services/rolling.py)
    advanced: int = 0  # league boards whose tiers or waiting players Redis got
    failed: int = 0  # periods whose step failed (logged; retried next pass)
    seconds: float = 0.0
    freeze_seconds: float = 0.0  # time spent freezing (for the archive rate)

    @property
    def entries_per_s(self) -> float:
        return self.entries / self.freeze_seconds if self.freeze_seconds else 0.0


class SeasonJob:
    def __init__(
        self,
        reads: Reads,
        season_keys: SeasonKeys,
        pg: PostgresStore,
        boards: BoardRegistry,
        rebuilder: Rebuilder,
        applied_through: Callable[[], Awaitable[int | None]],
        *,
        settle_ms: int = 15_000,
        clock: Clock = wall_clock,
        page_size: int = 10_000,
        run_memory_s: float = 86_400.0,
    ) -> None:
        self.run_memory_ms = int(run_memory_s * 1000)
        self.reads = reads
        self.season_keys = season_keys
        self.pg = pg
        self.boards = boards
        self.rebuilder = rebuilder
        self.applied_through = applied_through
        self.settle_ms = settle_ms
        self.clock = clock
        self.page_size = page_size
        self.leagues = Leagues(rebuilder.redis.leagues, pg)

    async def run_forever(self, interval_s: float, stop: asyncio.Event) -> None:
        """A pass every ``interval_s`` until ``stop`` is set."""
        while not await wait_or_stop(stop, interval_s):
            try:
                report = await self.run_pass()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("season job: %s: %s", type(exc).__name__, exc)
                continue
            if report.frozen or report.archived or report.thawed:
                logger.info(
                    "season job: froze %d periods (%d entries, %.0f entries/s),"
                    " %d left Redis, %d reopened",
                    report.frozen,
                    report.entries,
                    report.entries_per_s,
                    report.archived,
                    report.thawed,
                )

    async def run_pass(
        self,
        now_ms: int | None = None,
        progress: Progress | None = None,
        *,
        boards: Collection[str] | None = None,
        wait_for_lease_s: float = 0.0,
    ) -> SeasonReport:
        """One pass over every period (or those of ``boards``) at ``now_ms`` (default: the
        clock), if this instance gets the lease."""
        started = time.perf_counter()
        now = self.clock() if now_ms is None else now_ms
        report = SeasonReport()
        async with self.pg.lease(SEASON_LOCK, wait_s=wait_for_lease_s) as conn:
            if conn is None:
                report.lease = False
                return report
            configs = {b.board_id: b for b in await self.boards.list()}
            # run fingerprints are binding for run_memory_s (services/run_ids.py); keep
            # twice that, for restoring a registry, then let them go
            for board_id in configs:
                await fingerprints.forget_before(conn, board_id, now - 2 * self.run_memory_ms)
            through = await self._applied_through()
            for item in await archive_job.job_periods(conn, now, boards):
                board = configs.get(item.ref.board)
                if board is None:
                    continue
                try:
                    await self._one(conn, board, item, now, through, report, progress)
                except Exception as exc:
                    if conn.closed:
                        raise  # the lease went with its connection: stop here
                    # one period's failure (Redis down, say) must not hold up the others
                    report.failed += 1
                    logger.warning("season job: %s: %s: %s", item.ref, type(exc).__name__, exc)
            for board in configs.values():  # occurrences with no run: announced all the same
                if boards is None or board.board_id in boards:
                    await webhooks.announce_empty_occurrences(conn, board, now, self.settle_ms)
            for board in configs.values():  # each board's own steps
                if boards is None or board.board_id in boards:
                    await self._board_pass(conn, board, now, through, report)
        report.seconds = time.perf_counter() - started
        metrics.SEASON_LAST_PASS.set(time.time())
        return report

    async def _board_pass(
        self, conn: Conn, board: BoardConfig, now: int, through: int | None, report: SeasonReport
    ) -> None:
        """Days leaving the board's rolling-7d window (services/rolling.py); its league's
        tiers and waiting players (services/leagues.py)."""
        try:
            redis = self.rebuilder.redis
            announce = redis.notices.announce_everything
            if await rolling.roll(self.pg, redis, self.rebuilder, board, now, announce):
                report.rolled += 1
            if board.league is not None:

                def settled(period: Period) -> bool:
                    closes = board.closes_at_ms(period)
                    return (
                        closes is not None
                        and now >= closes + self.settle_ms
                        and (through is None or through >= closes)
                    )

                if await self.leagues.advance(conn, board, now, settled):
                    report.advanced += 1
        except Exception as exc:
            if conn.closed:
                raise  # the lease went with its connection: stop here
            report.failed += 1
            logger.warning("season job: %s: %s: %s", board.board_id, type(exc).__name__, exc)

    async def _applied_through(self) -> int | None:
        try:
            return await self.applied_through()
        except Exception as exc:
            # unknown: freeze nothing this pass rather than miss a run
            logger.warning("season job: cannot read the log consumer's progress: %r", exc)
            return 0

    async def _one(
        self,
        conn: Conn,
        board: BoardConfig,
        item: archive_job.JobPeriod,
        now: int,
        through: int | None,
        report: SeasonReport,
        progress: Progress | None,
    ) -> None:
        ref, state = item.ref, item.state
        period = board.period_of(ref.window, ref.period)
        action = decide(board, period, state, now, self.settle_ms, through)
        if action == "wait":
            report.waiting += 1
            logger.info("season job: %s waits for the log consumer before freezing", ref)
            return
        league_period = (
            board.league is not None and ref.window == board.league.window and not ref.segment
        )
        if (
            action == "thaw"
            and league_period
            and await leagues_db.is_moved(conn, ref.board, ref.period)
        ):
            # its moves made, the next period placed by them: it stays as it froze
            logger.info("season job: %s keeps its league moves: not reopened", ref)
            return
        if (
            action == "freeze"
            and league_period
            and not await self.leagues.ready_to_freeze(conn, board, period, now)
        ):
            report.waiting += 1  # its waiting players are placed first
            return
        if action == "thaw":
            await archive_job.thaw(conn, ref)
            if state is not None and state.archived:
                fresh = await self.pg.get_board(ref.board) or board  # a move may have switched
                await self.rebuilder.rebuild(ref.board, ref.window, ref.period, fresh_config=fresh)
            report.thawed += 1
            return
        if action == "freeze":
            frozen_at = time.perf_counter()
            entries = await self._freeze(conn, board, ref, period, now, progress)
            report.freeze_seconds += time.perf_counter() - frozen_at
            if entries is None:
                return  # frozen meanwhile by another pass
            report.frozen += 1
            report.entries += entries
            metrics.SEASON_PERIODS_FROZEN.inc()
            metrics.SEASON_ENTRIES_ARCHIVED.inc(entries)
            state = ArchiveState(entries, archived=False)
            action = decide(board, period, state, now, self.settle_ms, through)
        if action == "expire":
            # a turn of the apply lock: every build that did not see the mark has swapped
            await archive_job.mark_archived(conn, ref, now)
            await apply_lock.turn(conn, exclusive=False)
            await self.season_keys.unlink_period(ref)
            league = board.league
            if league is not None and ref.window == league.window and not ref.segment:
                await self.leagues.keys.unlink_period(ref.board, ref.period)
            report.archived += 1
            metrics.SEASON_PERIODS_ARCHIVED.inc()

    async def _freeze(
        self,
        conn: Conn,
        board: BoardConfig,
        ref: PeriodRef,
        period: Period,
        now: int,
        progress: Progress | None,
    ) -> int | None:
        codec = codec_for(board, ref.window)
        if await self.reads.period_exists(ref):
            source = "redis"
            pages = self._redis_pages(ref, codec, period.start_ms)
        else:
            # Redis lost the key (and the rebuild left it out): the durable copy has it all
            source = "player_best"
            pages = self._player_best_pages(ref, codec, period.start_ms)

        async def announce(tx: Conn, archive_id: int, total: int) -> None:
            await webhooks.record_period_closed(tx, board, ref, archive_id, total, now)
            league = board.league
            if league is not None and ref.window == league.window and not ref.segment:
                # the moves, exactly once with the freeze (services/leagues.py)
                await leagues_db.make_moves(
                    tx, board.board_id, league, ref.period, period.start_ms, archive_id, now
                )

        return await archive_job.freeze(
            conn, ref, period.start_ms, source, now, pages, progress, announce
        )

    async def _redis_pages(
        self, ref: PeriodRef, codec: Codec, start_ms: int
    ) -> AsyncIterator[list[FrozenEntry]]:
        async for page in self.season_keys.period_pages(ref, self.page_size):
            yield _entries(codec, start_ms, *page)

    async def _player_best_pages(
        self, ref: PeriodRef, codec: Codec, start_ms: int
    ) -> AsyncIterator[list[FrozenEntry]]:
        async for page in archive_job.player_best_pages(self.pg, ref, self.page_size):
            yield _entries(codec, start_ms, *page)


def _entries(
    codec: Codec,
    start_ms: int,
    players: list[str],
    composites: list[int],
    names: list[str | None],
    times: list[int],
    metadata: list[bytes | None],
) -> list[FrozenEntry]:
    """Entries as a live read renders them: the score from the composite, the exact
    achieved time (the tie bucket's start for an entry from before exact times)."""
    unpack = codec.unpack
    out: list[FrozenEntry] = []
    append = out.append
    for player_id, composite, name, at, meta in zip(
        players, composites, names, times, metadata, strict=True
    ):
        score, offset = unpack(composite)
        text = None if meta is None else meta.decode()
        append((player_id, composite, score, at or start_ms + offset, name, text))
    return out
