"""Rebuild Redis boards from the PostgreSQL copy, and notice when Redis needs it.

A period's members come out of ``player_best`` as pages PostgreSQL formats in composite
order (stores/rebuild/), loaded into staging keys beside the board (same hash tag) and
swapped in, so readers never see half a board: a period at a time (one_period.py), many
small ones per round trip (small.py), a large one in parallel streams (parallel.py).

The rebuild holds the apply lock exclusively: every consumer batch either committed before
the snapshot (so it is in it) or runs after the swap (so it lands on the new keys), and
nothing acknowledged is missing. Redis's ``run_id`` changes on every restart: the boards
remember the one they were last verified on (the marker key); another one means Redis
restarted (with an AOF that lost its last second, or empty), and everything is rebuilt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from rankd import metrics
from rankd.boards import BoardConfig
from rankd.periods import ALL_TIME, ENDLESS, PeriodRef
from rankd.plan import counted_ids_kept_since, sum_horizon_ms
from rankd.services.leagues import Leagues
from rankd.services.rebuild import one_period, selection, small
from rankd.services.rebuild import parallel as parallel_rebuild
from rankd.services.rebuild.small import SmallBatches
from rankd.services.registry import BoardRegistry
from rankd.services.tournaments import restore_admission
from rankd.stores import entry_metadata
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.rebuild import pages as rebuild_pages
from rankd.stores.rebuild import players as rebuild_players
from rankd.stores.rebuild import small as rebuild_small
from rankd.stores.redis.bulk import SmallPeriod
from rankd.stores.redis.stores import RedisStores

logger = logging.getLogger("rankd.rebuild")

# A period of at least PARALLEL_MIN entries (or of unknown size: a rebuild of one period)
# is loaded by up to ``Rebuilder.streams`` streams at once (services/rebuild/parallel.py).
PARALLEL_MIN = 50_000
# One by default: the parallel path's gain on two shared cores was 0.9-1.4x
# (docs/giant-boards.md), and a period of unknown size (one rebuilt alone) would open its
# connections however small it is; RANKD_REBUILD_STREAMS turns it on.
STREAMS = 1

Progress = Callable[[int], None]


@dataclass
class RebuildReport:
    periods: int = 0
    members: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)

    @property
    def members_per_s(self) -> float:
        return self.members / self.seconds if self.seconds else 0.0


class Rebuilder:
    def __init__(
        self,
        redis: RedisStores,
        pg: PostgresStore,
        boards: BoardRegistry,
        *,
        streams: int = STREAMS,
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.boards = boards
        # parallel streams for a large period (RANKD_REBUILD_STREAMS; 1: one at a time)
        self.streams = streams
        # the periods this process is restoring right now (reads of them answer 503 until
        # each is in place); at most the periods of one rebuild, emptied when it ends
        self.restoring: set[PeriodRef] = set()
        # True while the player names and profile segments are being restored (a submit
        # must not resolve a run's profile segments from a half-restored copy)
        self.restoring_profiles = False

    def is_restoring(self, ref: PeriodRef) -> bool:
        return bool(self.restoring) and ref in self.restoring

    async def _load(
        self,
        conn: Conn,
        todo: list[tuple[PeriodRef, int, BoardConfig]],
        banned: dict[PeriodRef, list[str]],
        held: dict[PeriodRef, list[tuple[str, int, int]]],
        now_ms: int,
        report: RebuildReport,
        progress: Progress | None,
        whole: bool,
    ) -> None:
        """Load ``todo`` in its order: small periods in batches (small.py), a large one
        by several streams (parallel.py) or one (one_period.py)."""
        sizes = await rebuild_small.period_sizes(conn, None, None, None) if whole else {}
        if not whole and len(todo) > 1:
            board_id, window = todo[0][0][0], todo[0][0][1]
            one_window = all(t[0][0] == board_id and t[0][1] == window for t in todo)
            sizes = await rebuild_small.period_sizes(
                conn, board_id, window if one_window else None, None
            )

        def landed(members: int) -> None:
            report.members += members
            if progress is not None:
                progress(members)

        batches = SmallBatches(conn, self._load_small, landed)
        try:
            for ref, start_ms, config in todo:
                if sizes and small.is_small(config, ref, sizes, banned, held):
                    await batches.add(ref, start_ms, sizes.get(ref, 0))
                    continue
                since = None
                if config.policy_of(ref[1]) == "sum":
                    since = counted_ids_kept_since(config, now_ms) if ref[1] == ALL_TIME else 0
                if self.streams > 1 and sizes.get(ref, PARALLEL_MIN) >= PARALLEL_MIN:
                    report.members += await self._load_parallel(
                        conn, ref, config, start_ms, since, progress, banned, held
                    )
                else:
                    report.members += await one_period.load(
                        self.redis.loads, conn, ref, config, start_ms, since, progress, banned, held
                    )
                self.restoring.discard(ref)
                metrics.REBUILDS.inc()
            await batches.finish()
        finally:
            await batches.cancel()
        report.periods = len(todo)

    async def _load_parallel(
        self,
        conn: Conn,
        ref: PeriodRef,
        config: BoardConfig,
        start_ms: int,
        since: int | None,
        progress: Progress | None,
        banned: dict[PeriodRef, list[str]],
        held: dict[PeriodRef, list[tuple[str, int, int]]],
    ) -> int:
        def counted(shard: tuple[int, int]) -> parallel_rebuild.PageReader | None:
            if since is None:
                return None
            return rebuild_pages.counted_run_pages_of(
                conn, ref, since, sum_horizon_ms(config), shard
            )

        return await parallel_rebuild.load_period(
            self.redis.loads,
            self.pg.url,
            conn,
            ref,
            config.shards,
            self.streams,
            start_ms,
            progress,
            shadowed=banned.get(ref, []),
            held=held.get(ref, []),
            counted_runs=counted,
        )

    async def _load_small(self, found: list[SmallPeriod]) -> int:
        members = await self.redis.loads.load_small_periods(found)
        for period in found:
            self.restoring.discard(period.ref)
            metrics.REBUILDS.inc()
        return members

    async def rebuild(
        self,
        board: str | None = None,
        window: str | None = None,
        period: str | None = None,
        progress: Progress | None = None,
        *,
        when: Literal["always", "redis_changed", "missing"] = "always",
        fresh_config: BoardConfig | None = None,
        serve_meanwhile: bool = False,
        standings_only: bool = False,
    ) -> RebuildReport | None:
        """Restore the selected periods (default: all). Returns None if nothing was needed.

        ``redis_changed``: only if Redis is not the process the boards were verified on.
        ``missing``: only periods whose board key is gone. ``fresh_config``: the board's
        config as the caller just read it (else the registry's, which may be seconds old).
        ``serve_meanwhile``: the periods' keys are whole (a rolling window's day change),
        so reads keep being answered from them until the swap, not 503.
        ``standings_only``: the standings and their metadata, not the admission and league
        keys beside them (a resharding's build of its new layout: fresh_config's).
        """
        started = time.perf_counter()
        report = RebuildReport()
        if when == "redis_changed" and await self.redis.positions.is_verified():
            return None  # the common case, decided without taking the lock
        async with self.pg.apply_lock(exclusive=True) as conn:
            run_id = await self.redis.positions.server_run_id()
            if when == "redis_changed" and await self.redis.positions.is_verified():
                return None  # another instance rebuilt while we waited for the lock
            now_ms = int(time.time() * 1000)
            whole = board is None and window is None and period is None
            if whole and when != "missing":
                # a restarted Redis may have lost its last run-id claims: each board's next
                # submit restores its registry from PostgreSQL and the log first
                await self.redis.admission.disarm_run_ids(
                    [b.board_id for b in await self.boards.list()]
                )
            if whole and (when != "missing" or not await self.redis.profiles.has_names()):
                # first: submits resolve profile segments from this copy before logging
                self.restoring_profiles = True
                try:
                    await self.redis.profiles.restore_names(rebuild_players.name_chunks(conn))
                    await self.redis.profiles.restore_profile_segments(
                        rebuild_players.profile_segment_chunks(conn)
                    )
                finally:
                    self.restoring_profiles = False
            chosen = await selection.select(
                conn, self.boards, board, window, period, fresh_config, now_ms
            )
            todo, banned, held = chosen.todo, chosen.banned, chosen.held
            report.skipped += chosen.skipped
            if when == "missing":
                missing = await self.redis.loads.missing_periods([ref for ref, _, _ in todo])
                todo = [t for t in todo if t[0] in missing]
            # the current periods first: each is served as soon as it is in place
            todo.sort(key=lambda t: (t[0][1] not in ENDLESS, -t[1]))
            self.restoring = set() if serve_meanwhile else {ref for ref, _, _ in todo}
            # a board being resharded keeps its other layout whole too (services/resharding.py)
            others = [
                (ref, start_ms, replace(c, shards=c.other_layout, reshard=None))
                for ref, start_ms, c in todo
                if c.other_layout is not None
            ]
            try:
                for group in (todo, others):
                    await entry_metadata.restore(
                        conn, self.redis.loads, group, board, window, period
                    )
                if not standings_only:
                    await restore_admission(
                        conn, self.redis.tournaments, todo, board, window, period
                    )
                    leagues = Leagues(self.redis.leagues, self.pg)
                    for config in {c.board_id: c for _, _, c in todo if c.league}.values():
                        await leagues.restore(conn, config)  # the placements and tiers
                await self._load(conn, todo + others, banned, held, now_ms, report, progress, whole)
            finally:
                self.restoring = set()
            if whole and when != "missing":
                await self.redis.positions.mark_verified(run_id)
        self.redis.index.forget()
        report.seconds = time.perf_counter() - started
        logger.info(
            "rebuilt %d periods, %d members in %.2fs (%.0f members/s)",
            report.periods,
            report.members,
            report.seconds,
            report.members_per_s,
        )
        return report
