"""The process's watch on its dependencies: probes, readiness, and a restarted Redis.

Each dependency is pinged every HEALTH_INTERVAL_S to notice it lost and back
(services/recovery.py says what is recovering and how far); the Redis watch restores a
Redis that came back as a different process (services/rebuild/restart.py) and warns when its
memory nears its limit.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rankd import metrics
from rankd.aio import wait_or_stop
from rankd.embedded.supervisor import describe, read_status
from rankd.services.consumer import DURABLE
from rankd.services.node_writers import NodeWriters
from rankd.services.rebuild.restart import Restorer, RestoreReport
from rankd.services.recovery import Recovery
from rankd.settings import Settings
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.keys import HASH_LISTPACK_ENTRIES, TIME_BUCKETS
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import RunLog

logger = logging.getLogger("rankd")

# How often each dependency is pinged to notice it lost and back (three small round trips).
HEALTH_INTERVAL_S = 0.25


class Health:
    """The runtime's watch on Redis, PostgreSQL and NATS (runtime.py starts its loops)."""

    def __init__(
        self,
        settings: Settings,
        redis: RedisStores,
        pg: PostgresStore,
        runlog: RunLog,
        restorer: Restorer,
        recovery: Recovery,
        stopping: asyncio.Event,
    ) -> None:
        self.settings = settings
        self.redis = redis
        self.pg = pg
        self.runlog = runlog
        self.restorer = restorer
        self.recovery = recovery
        self.stopping = stopping
        self.wake_redis_watch = asyncio.Event()
        self.rebuilding = False
        # the Redis process (or cluster primaries) this instance last found verified
        self.redis_seen: str | None = None
        self.consumer_started = False  # background work runs (not so for `rankd rebuild`)
        self.writers = NodeWriters(pg, restorer)
        self._writers: asyncio.Task[None] | None = None
        self.catching_up = False  # a replaced node's writes replayed (services/node_writers.py)

    async def watch_redis(self) -> None:
        """Rebuild from PostgreSQL whenever Redis comes back as a different process (checked
        every interval, and at once when the health watch sees Redis answer again); warn
        when its memory nears its limit."""
        interval = self.settings.redis_watch_interval_s
        memory_checked = 0.0
        while True:
            await wait_or_stop(self.wake_redis_watch, interval)
            self.wake_redis_watch.clear()
            if self.stopping.is_set():
                if self._writers is not None:
                    self._writers.cancel()
                return
            try:
                if time.monotonic() - memory_checked >= self.settings.redis_memory_check_s:
                    memory_checked = time.monotonic()
                    await self.check_redis_memory()
                run_id = await self.redis.positions.server_run_id()
                if await self.redis.positions.verified_id() == run_id:
                    seen = self.redis_seen
                    # another instance restored a new Sentinel primary while this one wrote
                    # to the old (a single Redis cannot split; a cluster primary cut off
                    # refuses writes before its replica takes over)
                    sentinel = self.redis.conn.target.mode == "sentinel"
                    if seen is not None and seen != run_id and sentinel:
                        await self._redis_moved(
                            "catching up: restored by another instance",
                            functools.partial(self.restorer.catch_up, seen),
                        )
                    self.redis_seen = run_id
                    if sentinel and (self._writers is None or self._writers.done()):
                        # what any instance wrote to a node since replaced: beside this loop
                        self._writers = asyncio.create_task(self._writers_round(run_id))
                    continue
                if await self._redis_moved("restarted: restoring", self.restorer.restore):
                    # restored here: this instance wrote only to it since closing its
                    # connections (else another restored it first: the next round catches up)
                    self.redis_seen = await self.redis.positions.server_run_id()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("redis watch: %r", exc)
            finally:
                self.rebuilding = False

    async def _writers_round(self, run_id: str) -> None:
        try:
            await self.writers.round(run_id, self._catch_up_others)
        except Exception as exc:
            logger.warning("redis writers: %r", exc)

    async def _catch_up_others(self, node: str) -> RestoreReport:
        """Replay what instances wrote to ``node``, a replaced primary, into this one: not
        ready meanwhile (a full rebuild if the replay's start is unknown)."""
        self.catching_up = True
        self.recovery.begin("redis", f"catching up what was written to {node}")
        try:
            # (the restorer logs what it did)
            return await self.restorer.catch_up(
                node, lambda stage: self.recovery.begin("redis", stage)
            )
        finally:
            self.catching_up = False

    async def _redis_moved(
        self, what: str, restore: Callable[[Callable[[str], None]], Awaitable[RestoreReport | None]]
    ) -> RestoreReport | None:
        """Restore Redis (or catch it up) after it changed under this instance. Every pooled
        connection goes first: one left on a replaced primary would write where nobody
        reads (the tail replayed covers what such connections wrote before)."""
        self.rebuilding = True
        self.recovery.begin("redis", what)
        await self.redis.conn.forget_connections()
        # the log's tail if Redis kept its data, else a rebuild (rebuild/restart.py)
        return await restore(lambda stage: self.recovery.begin("redis", stage))

    async def watch_health(self) -> None:
        """Notice a dependency lost and back, and when reads are complete again."""
        while not await wait_or_stop(self.stopping, HEALTH_INTERVAL_S):
            try:
                await self._check_health()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a dependency failing mid-check: next round
                logger.debug("health watch: %r", exc)

    async def _check_health(self) -> None:
        checks = await self.probe(timeout_s=1.0)
        for name, state in checks.items():
            metrics.DEPENDENCY_UP.labels(name).set(1 if state == "ok" else 0)
            if state != "ok":
                self.recovery.begin(name, state)
        metrics.RECOVERING.set(len(self.recovery.pending))
        self._note_supervisor()
        if checks["redis"] == "ok":
            await self.notice_redis_restart()
        if not self.recovery.pending or checks["nats"] != "ok":
            return
        for name in list(self.recovery.pending):
            if not self.recovery.waiting(name) or checks.get(name, "ok") != "ok":
                continue
            if name == "redis" and (
                self.rebuilding or self.catching_up or not await self.redis.positions.is_verified()
            ):
                continue  # the rebuild sets its target when done
            if name == "postgres":
                await self.pg.pool.check()  # drop the pooled connections that died with it
            self.recovery.back(name, await self.runlog.last_sequence())
        if any(p.target is not None for p in self.recovery.pending.values()):
            lag = await self.runlog.lag(DURABLE)
            self.recovery.applied(lag.ack_floor, lag.caught_up)

    def _note_supervisor(self) -> None:
        """The embedded servers' supervisor, as metrics (its status file; none when the
        servers are the operator's)."""
        path = self.settings.embedded_status_file
        # the operator's own servers: no supervisor, nothing given up
        found = {} if path is None else read_status(path)
        for name in ("redis", "postgres", "nats"):
            found.setdefault(name, {})
        for name, status in found.items():
            metrics.EMBEDDED_GAVE_UP.labels(name).set(1 if status.get("state") == "failed" else 0)
            restarts = status.get("restarts")
            metrics.EMBEDDED_RESTARTS.labels(name).set(restarts if isinstance(restarts, int) else 0)

    async def check_redis_settings(self) -> int | None:
        """Warn once if Redis would keep the exact-times hashes as hashtables early: a
        period holds 65,521 of them, so past 512 entries a hash (33M members a period)
        each member costs about 63 B more than as a listpack (docs/operations.md)."""
        limit = await self.redis.conn.hash_listpack_limit()
        if limit is not None and limit < HASH_LISTPACK_ENTRIES:
            logger.warning(
                "Redis's hash-max-ziplist-entries is %d: a period of more than %dM members"
                " keeps its exact times in hashtables, about 63 B more a member; set it to"
                " %d (hash-max-listpack-entries on Redis 7)",
                limit,
                limit * TIME_BUCKETS // 1_000_000,
                HASH_LISTPACK_ENTRIES,
            )
        return limit

    async def check_redis_memory(self) -> float:
        """Redis's used share of its maxmemory (0: no limit), logged past the warning ratio."""
        used, limit = await self.redis.conn.memory()
        ratio = used / limit if limit else 0.0
        metrics.REDIS_MEMORY_USED.set(ratio)
        if ratio >= self.settings.redis_memory_warn_ratio:
            logger.warning(
                "Redis uses %.0f%% of its maxmemory (%d of %d bytes): past 100%% it refuses"
                " writes and submits fail; raise RANKD_REDIS_MAX_MEMORY or let closed periods"
                " expire",
                ratio * 100,
                used,
                limit,
            )
        return ratio

    async def readiness(self) -> dict[str, str]:
        """Each dependency's state: "ok" or why not (with what the supervisor of the
        embedded servers is doing about it, if anything)."""
        checks = await self.probe(timeout_s=2.0)
        path = self.settings.embedded_status_file
        if path is not None and any(state != "ok" for state in checks.values()):
            for name, status in read_status(path).items():
                said = describe(status)
                if said is not None and checks.get(name, "ok") != "ok":
                    checks[name] = f"down: {said}"[:300]
        return checks

    async def notice_redis_restart(self) -> None:
        """A Redis that is not the process the boards were verified on (it restarted, maybe
        faster than a ping could see it down) is recovering from now on, and the Redis
        watch is woken to rebuild it at once rather than at its next interval."""
        stage = self.recovery.stage("redis")
        if stage and not stage.startswith("down"):
            return  # being rebuilt, or rebuilt and waiting for the log's tail
        if self.consumer_started and not await self.redis.positions.is_verified():
            self.recovery.begin("redis", "restarted: restoring")
            self.wake_redis_watch.set()
        elif stage:
            self.wake_redis_watch.set()  # seen down, back: the watch decides

    async def recovering(self) -> dict[str, str]:
        """What is recovering and how far; reads may miss acknowledged runs until empty.
        Asks Redis whether it is still the verified process (a restart may be too quick
        for the health watch to have seen it down)."""
        if self.consumer_started and "redis" not in self.recovery.pending:
            try:
                await asyncio.wait_for(self.notice_redis_restart(), 1.0)
            except Exception as exc:  # Redis down: /readyz says so already
                logger.debug("recovering: is Redis the verified process? %r", exc)
        return self.recovery.describe()

    async def probe(self, timeout_s: float) -> dict[str, str]:
        # Each probe is started inside its check, so a probe cancelled before it ran (at
        # shutdown) leaves no coroutine that was never awaited.
        async def check(name: str, probe: Callable[[], Awaitable[Any]]) -> tuple[str, str]:
            try:
                await asyncio.wait_for(probe(), timeout=timeout_s)
                return name, "ok"
            except Exception as exc:
                cause = exc.__cause__ or exc
                return name, f"down: {type(cause).__name__}: {cause}"[:200]

        results = await asyncio.gather(
            # every primary: /readyz says 503 while writes to any board's slots would fail
            check("redis", self.redis.conn.ping_every_primary),
            check("postgres", self.pg.ping),
            check("nats", self.runlog.ping),
        )
        return dict(results)
