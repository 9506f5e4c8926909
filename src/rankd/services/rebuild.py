"""Rebuild Redis boards from the PostgreSQL copy, and notice when Redis needs it.

A period is streamed out of ``player_best`` with COPY in composite order (Redis inserts
sorted input fastest), loaded with multi-member ZADDs into a temporary key beside the board
(same hash tag), then RENAMEd over it, so readers never see half a board. A ``sum`` board's
counted run ids are restored the same way.

The rebuild holds the apply lock exclusively: every consumer batch either committed before
the snapshot (so it is in it) or runs after the RENAME (so it lands on the new key). Runs
logged but not yet in PostgreSQL are therefore applied by the consumer afterwards, and
nothing acknowledged is missing.

Redis's ``run_id`` changes on every restart. The boards remember the run id they were last
verified on (the marker key); a different one means Redis restarted, maybe with an AOF that
lost its last second or with no data at all, and everything is rebuilt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd import keys, metrics
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound
from rankd.periods import ALL_TIME, parse_period
from rankd.services.registry import BoardRegistry
from rankd.services.submit import Submitter, expires_at_ms, sum_horizon_ms
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore

log = logging.getLogger("rankd.rebuild")

MARKER = "rankd:verified-redis-run-id"
CHUNK = 1000  # members per ZADD
FLUSH_EVERY = 16  # ZADDs per pipeline round trip

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


class _Loader:
    """Pipelined multi-member ZADDs into one key."""

    def __init__(self, redis: Redis, key: str, progress: Progress | None) -> None:
        self.redis = redis
        self.key = key
        self.progress = progress
        self.args: list[Any] = []
        self.pipe = redis.pipeline(transaction=False)
        self.queued = 0
        self.loaded = 0

    async def add(self, member: bytes, score: bytes) -> None:
        self.args += (score, member)
        if len(self.args) >= 2 * CHUNK:
            self._queue()
            if self.queued >= FLUSH_EVERY:
                await self._send()

    async def flush(self) -> None:
        self._queue()
        await self._send()

    def _queue(self) -> None:
        if not self.args:
            return
        self.pipe.execute_command("ZADD", self.key, *self.args)
        count = len(self.args) // 2
        self.args = []
        self.queued += 1
        self.loaded += count
        if self.progress is not None:
            self.progress(count)

    async def _send(self) -> None:
        if self.queued:
            await self.pipe.execute()
            self.queued = 0


class Rebuilder:
    def __init__(
        self, redis: Redis, pg: PostgresStore, boards: BoardRegistry, submitter: Submitter
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.boards = boards
        self.submitter = submitter

    async def rebuild(
        self,
        board: str | None = None,
        window: str | None = None,
        period: str | None = None,
        progress: Progress | None = None,
        *,
        only_if_redis_changed: bool = False,
    ) -> RebuildReport | None:
        """Restore the selected periods (default: all). Returns None if nothing was needed."""
        started = time.perf_counter()
        report = RebuildReport()
        async with self.pg.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (standings.APPLY_LOCK,))
            run_id = await self._redis_run_id()
            if only_if_redis_changed and await self.redis.get(MARKER) == run_id.encode():
                return None
            now_ms = int(time.time() * 1000)
            selected = await standings.periods(conn, board, window, period)
            for board_id, win, pid, start_ms in selected:
                try:
                    config = await self.boards.get(board_id)
                except BoardNotFound:
                    report.skipped.append(f"{board_id}: no such board")
                    continue
                expires = expires_at_ms(config, parse_period(win, pid))
                if expires is not None and now_ms >= expires:
                    continue  # past its Redis retention: served from PostgreSQL
                loaded = await self._rebuild_period(
                    conn, config, (board_id, win, pid), expires, progress
                )
                await self.redis.zadd(keys.periods_index(board_id, win), {pid: start_ms}, nx=True)
                report.periods += 1
                report.members += loaded
                metrics.REBUILDS.inc()
            if board is None and window is None and period is None:
                await self.redis.set(MARKER, run_id)
        self.submitter.forget_indexed()
        report.seconds = time.perf_counter() - started
        log.info(
            "rebuilt %d periods, %d members in %.2fs (%.0f members/s)",
            report.periods,
            report.members,
            report.seconds,
            report.members_per_s,
        )
        return report

    async def _rebuild_period(
        self,
        conn: AsyncConnection[Any],
        config: BoardConfig,
        key: standings.PeriodKey,
        expires: int | None,
        progress: Progress | None = None,
    ) -> int:
        pk = keys.period_keys(*key)
        loader = _Loader(self.redis, pk.public + ":rebuild", progress)
        await self.redis.delete(loader.key)
        async for member, composite in standings.stream_entries(conn, key):
            await loader.add(member, composite)
        await loader.flush()
        if config.policy == "sum":
            now_ms = int(time.time() * 1000)
            since = now_ms - sum_horizon_ms(config) if key[1] == ALL_TIME else 0
            runs = _Loader(self.redis, pk.runs + ":rebuild", None)
            await self.redis.delete(runs.key)
            async for member, ended in standings.stream_sum_runs(conn, key, since):
                await runs.add(member, ended)
            await runs.flush()
            await self._swap(runs.key, pk.runs, runs.loaded, expires)
        await self._swap(loader.key, pk.public, loader.loaded, expires)
        return loader.loaded

    async def _swap(self, staged: str, live: str, loaded: int, expires: int | None) -> None:
        if loaded == 0:
            await self.redis.delete(live)
            return
        pipe = self.redis.pipeline(transaction=True)
        pipe.rename(staged, live)
        if expires is not None:
            pipe.pexpireat(live, expires)
        await pipe.execute()

    async def _redis_run_id(self) -> str:
        info = await self.redis.info("server")
        return str(info["run_id"])
