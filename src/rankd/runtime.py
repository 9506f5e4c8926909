"""The process's connections and services, opened and closed together by the app lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rankd import metrics
from rankd.aio import stop_tasks, wait_or_stop
from rankd.api.auth import Authenticator
from rankd.embedded.supervisor import describe, read_status
from rankd.services.applier import Applier
from rankd.services.approx import Histograms
from rankd.services.consumer import DURABLE, LogConsumer, applied_through
from rankd.services.deletion import Deletions
from rankd.services.group_commit import GroupCommitter
from rankd.services.live import LiveHub
from rankd.services.moderation import Moderation
from rankd.services.names import NameCache
from rankd.services.players import Players
from rankd.services.rate_limits import Rate, RateLimiter
from rankd.services.reads import Reader
from rankd.services.rebuild import Rebuilder
from rankd.services.recovery import Recovery
from rankd.services.registry import BoardRegistry
from rankd.services.restart import Restorer
from rankd.services.run_ids import RunIds
from rankd.services.seasons import SeasonJob
from rankd.services.segment_values import SegmentValues
from rankd.services.submit import Submitter
from rankd.settings import Settings
from rankd.stores.archive import ArchiveStore
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis_store import RedisStore
from rankd.stores.runlog import Durable, JetStreamLog, RunLog

log = logging.getLogger("rankd")

CLOSE_TIMEOUT_S = 5.0
MAX_HEALS = 64  # pending rebuilds after run-id conflicts (each a few periods)
# How often each dependency is pinged to notice it lost and back (three small round trips).
HEALTH_INTERVAL_S = 0.25


@dataclass
class Runtime:
    settings: Settings
    store: RedisStore
    pg: PostgresStore
    log: RunLog
    boards: BoardRegistry
    names: NameCache
    players: Players
    submitter: Submitter
    reader: Reader
    auth: Authenticator
    applier: Applier
    rebuilder: Rebuilder
    restorer: Restorer
    seasons: SeasonJob
    moderation: Moderation
    limiter: RateLimiter
    live: LiveHub
    deletions: Deletions
    consumer: LogConsumer | None = None
    # what is recovering and how far (services/recovery.py); /readyz is 503 until empty
    recovery: Recovery = field(default_factory=Recovery)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _heals: set[asyncio.Task[None]] = field(default_factory=set)
    _wake_redis_watch: asyncio.Event = field(default_factory=asyncio.Event)
    _rebuilding: bool = False
    _consumer_started: bool = False  # background work runs (not so for `rankd rebuild`)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        s = settings
        if not (s.redis_url and s.postgres_url and s.nats_url):
            raise ValueError("Runtime needs RANKD_REDIS_URL, RANKD_POSTGRES_URL and RANKD_NATS_URL")
        store = RedisStore(
            s.redis_url,
            max_connections=s.redis_max_connections,
            pool_timeout_s=s.redis_pool_timeout_s,
            index_memo_s=s.periods_index_memo_s,
            index_memo_bytes=s.periods_index_memo_bytes,
            marks_keep_s=s.applied_marks_keep_s,
            batch_in_flight=s.redis_batch_in_flight,
            read_from_replicas=s.redis_read_from_replicas,
        )
        pg = PostgresStore(
            s.postgres_url,
            min_size=s.postgres_pool_min,
            max_size=s.postgres_pool_max,
            timeout_s=s.postgres_pool_timeout_s,
        )
        log = JetStreamLog(
            s.nats_url,
            stream=s.stream,
            subject_prefix=s.subject_prefix,
            timeout_s=s.publish_timeout_s,
            replicas=s.stream_replicas,
        )
        names = NameCache(store, s.name_cache_ttl_s, s.name_cache_bytes)
        boards = BoardRegistry(
            pg,
            store,
            s.config_cache_ttl_s,
            max_bytes=s.config_cache_bytes,
            unknown_ttl_s=s.unknown_board_ttl_s,
            unknown_max_bytes=s.unknown_board_cache_bytes,
        )
        rebuilder = Rebuilder(store, pg, boards, streams=s.rebuild_streams)
        players = Players(pg, store, names, lambda: rebuilder.restoring_profiles)
        committer = GroupCommitter(
            log, max_in_flight=s.group_commit_max_in_flight, max_runs=s.group_commit_max_runs
        )
        run_ids = RunIds(store, pg, log, memory_s=s.run_memory_s, durable=DURABLE)

        async def log_applied_through() -> int | None:
            return await applied_through(log)

        moderation = Moderation(
            store, pg, boards, settle_s=s.ban_settle_s, applied_through=log_applied_through
        )

        # applies everything to Redis (no trusted marks): replays, and a restart's tail
        applier = Applier(boards, store, pg, moderation, run_memory_s=s.run_memory_s)
        deletions = Deletions(
            store,
            pg,
            log,
            boards,
            moderation,
            names,
            # every instance has dropped a deleted board's cached config by then
            settle_s=max(s.config_cache_ttl_s + 1.0, s.ban_settle_s),
            scrub_interval_s=s.erasure_scrub_interval_s,
            run_id_bucket_ms=run_ids.bucket_ms,
        )
        return cls(
            settings=s,
            deletions=deletions,
            store=store,
            pg=pg,
            log=log,
            boards=boards,
            names=names,
            players=players,
            submitter=Submitter(
                store,
                pg,
                committer,
                players,
                moderation,
                run_ids,
                SegmentValues(store, pg, s.segment_values_max),
            ),
            reader=Reader(
                store,
                names,
                s.top_cache_s,
                s.top_cache_bytes,
                archive=ArchiveStore(pg),
                archive_state_s=s.archive_state_cache_s,
                archive_state_bytes=s.archive_state_cache_bytes,
                restoring=rebuilder.is_restoring,
                histograms=Histograms(store),
            ),
            auth=Authenticator(s.admin_keys, s.server_keys),
            applier=applier,
            moderation=moderation,
            rebuilder=rebuilder,
            restorer=Restorer(store, pg, log, rebuilder, applier, boards),
            seasons=SeasonJob(
                store,
                pg,
                boards,
                rebuilder,
                log_applied_through,
                settle_ms=int(s.season_settle_s * 1000),
                run_memory_s=s.run_memory_s,
            ),
            limiter=RateLimiter(
                store,
                per_key=Rate(s.rate_key_per_s, s.rate_key_burst),
                per_address=Rate(s.rate_address_per_s, s.rate_address_burst),
                runs_per_key=Rate(s.rate_key_runs_per_s, s.rate_key_runs_burst),
                fail_open_s=s.rate_fail_open_s,
                refusal_memo_bytes=s.rate_refusal_memo_bytes,
                lease_s=s.rate_lease_s,
                lease_bytes=s.rate_lease_memo_bytes,
            ),
            live=LiveHub(store, s.live_max_streams, max_per_address=s.live_max_streams_per_address),
        )

    async def open(self, *, background: bool = True) -> None:
        """Connect; with ``background``, restore Redis if it changed and start the consumer,
        the Redis watch and the season job."""
        await asyncio.gather(self.pg.open(), self.log.open(), self.store.open())
        await self.moderation.bans.refresh()  # before the first run is routed
        if not background:
            return
        # A restarted Redis is rebuilt whole; otherwise any period whose key has gone (e.g.
        # deleted by hand) while PostgreSQL still holds its entries.
        if await self.store.is_verified():
            await self.rebuilder.rebuild(when="missing")
        else:
            # rebuilt in the background by the Redis watch (woken at once), so the periods
            # already in place are served while the rest load (reads of the others are
            # 503); /readyz says "redis" recovering until it is done and the tail applied
            self.recovery.begin("redis", "restarted: restoring")
            self._wake_redis_watch.set()
        # ready once the log's tail (whatever was logged but not applied yet) is applied
        self.recovery.begin("startup", "applying the log's tail")
        self.recovery.back("startup", await self.log.last_sequence())
        self._stopping.clear()
        self.consumer = self.log_consumer()
        await self.consumer.start()
        self._consumer_started = True
        self._tasks.append(asyncio.create_task(self._watch_redis(), name="redis-watch"))
        self._tasks.append(asyncio.create_task(self._watch_health(), name="health-watch"))
        bans = self.moderation.bans.run_forever(self.settings.ban_refresh_s, self._stopping)
        self._tasks.append(asyncio.create_task(bans, name="ban-refresh"))
        if self.reader.histograms is not None:  # one refresher per instance (approx ranks)
            refresh = self.reader.histograms.run(self._stopping)
            self._tasks.append(asyncio.create_task(refresh, name="histogram-refresh"))
        scrubber = self.deletions.run_scrubber(self._stopping)
        self._tasks.append(asyncio.create_task(scrubber, name="log-scrubber"))
        if self.settings.season_job_interval_s > 0:
            job = self.seasons.run_forever(self.settings.season_job_interval_s, self._stopping)
            self._tasks.append(asyncio.create_task(job, name="season-job"))

    def log_consumer(self) -> LogConsumer:
        s = self.settings
        durable = Durable(
            name=DURABLE,
            backoff_s=tuple(s.consumer_backoff_s),
            max_deliver=s.consumer_max_deliver,
            max_ack_pending=s.consumer_max_ack_pending,
        )
        return LogConsumer(
            self.log,
            Applier(
                self.boards,
                self.store,
                self.pg,
                self.moderation,
                mark_wait_s=s.consumer_mark_wait_s,
                run_memory_s=s.run_memory_s,
                heal=self.heal_periods,
            ),
            self.pg,
            durable,
            batch=s.consumer_batch,
            lag_refresh_s=s.lag_refresh_s,
        )

    def heal_periods(self, periods: list[tuple[str, str, str]]) -> None:
        """Rebuild these (board, window, period)s from PostgreSQL once their submitters
        have surely written to Redis (the consumer's mark wait, plus a margin): the log
        consumer applied a run of theirs nowhere for a run-id conflict (services/run_ids.py),
        which only happens after Redis lost claims, and Redis may hold it. Rare; at most
        MAX_HEALS pending, past that a warning says to run `rankd rebuild`."""
        if len(self._heals) >= MAX_HEALS:
            log.warning("run-id conflicts: too many heals pending; run `rankd rebuild`")
            return

        async def later() -> None:
            await asyncio.sleep(self.settings.consumer_mark_wait_s + 1.0)
            for board, window, period in periods:
                try:
                    await self.rebuilder.rebuild(board=board, window=window, period=period)
                except Exception as exc:
                    log.warning("heal of %s %s %s: %r", board, window, period, exc)

        task = asyncio.create_task(later(), name="run-id-conflict-heal")
        self._heals.add(task)
        task.add_done_callback(self._heals.discard)

    async def _watch_redis(self) -> None:
        """Rebuild from PostgreSQL whenever Redis comes back as a different process (checked
        every interval, and at once when the health watch sees Redis answer again); warn
        when its memory nears its limit."""
        interval = self.settings.redis_watch_interval_s
        memory_checked = 0.0
        while True:
            await wait_or_stop(self._wake_redis_watch, interval)
            self._wake_redis_watch.clear()
            if self._stopping.is_set():
                return
            try:
                if time.monotonic() - memory_checked >= self.settings.redis_memory_check_s:
                    memory_checked = time.monotonic()
                    await self.check_redis_memory()
                if await self.store.is_verified():
                    continue
                self._rebuilding = True
                self.recovery.begin("redis", "restarted: restoring")
                # the log's tail if Redis kept its data, else a rebuild (services/restart.py)
                await self.restorer.restore(lambda stage: self.recovery.begin("redis", stage))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("redis watch: %r", exc)
            finally:
                self._rebuilding = False

    async def _watch_health(self) -> None:
        """Notice a dependency lost and back, and when reads are complete again."""
        while not await wait_or_stop(self._stopping, HEALTH_INTERVAL_S):
            try:
                await self._check_health()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a dependency failing mid-check: next round
                log.debug("health watch: %r", exc)

    async def _check_health(self) -> None:
        checks = await self._probe(timeout_s=1.0)
        for name, state in checks.items():
            if state != "ok":
                self.recovery.begin(name, state)
        if checks["redis"] == "ok":
            await self._notice_redis_restart()
        if not self.recovery.pending or checks["nats"] != "ok":
            return
        for name in list(self.recovery.pending):
            if not self.recovery.waiting(name) or checks.get(name, "ok") != "ok":
                continue
            if name == "redis" and (self._rebuilding or not await self.store.is_verified()):
                continue  # the rebuild sets its target when done
            if name == "postgres":
                await self.pg.pool.check()  # drop the pooled connections that died with it
            self.recovery.back(name, await self.log.last_sequence())
        if any(p.target is not None for p in self.recovery.pending.values()):
            lag = await self.log.lag(DURABLE)
            self.recovery.applied(lag.ack_floor, not lag.pending and not lag.ack_pending)

    async def check_redis_memory(self) -> float:
        """Redis's used share of its maxmemory (0: no limit), logged past the warning ratio."""
        used, limit = await self.store.memory()
        ratio = used / limit if limit else 0.0
        metrics.REDIS_MEMORY_USED.set(ratio)
        if ratio >= self.settings.redis_memory_warn_ratio:
            log.warning(
                "Redis uses %.0f%% of its maxmemory (%d of %d bytes): past 100%% it refuses"
                " writes and submits fail; raise RANKD_REDIS_MAX_MEMORY or let closed periods"
                " expire",
                ratio * 100,
                used,
                limit,
            )
        return ratio

    async def close(self) -> None:
        """Stop the background work, then the connections; bounded, so a task stuck in a
        driver call cannot hold up a shutdown."""
        self._stopping.set()
        self._wake_redis_watch.set()
        stuck = await stop_tasks([*self._tasks, *self._heals], CLOSE_TIMEOUT_S)
        self._tasks.clear()
        stuck += await self.moderation.close()
        stuck += await self.deletions.close()
        await self.live.close()
        if self.consumer is not None:
            stuck += await self.consumer.stop(CLOSE_TIMEOUT_S)
        if stuck:
            log.warning(
                "shutdown: %s did not stop within %.0f s", ", ".join(stuck), CLOSE_TIMEOUT_S
            )
        await asyncio.wait(
            [
                asyncio.ensure_future(c)
                for c in (self.log.close(), self.pg.close(), self.store.close())
            ],
            timeout=CLOSE_TIMEOUT_S,
        )

    async def readiness(self) -> dict[str, str]:
        """Each dependency's state: "ok" or why not (with what the supervisor of the
        embedded servers is doing about it, if anything)."""
        checks = await self._probe(timeout_s=2.0)
        path = self.settings.embedded_status_file
        if path is not None and any(state != "ok" for state in checks.values()):
            for name, status in read_status(path).items():
                said = describe(status)
                if said is not None and checks.get(name, "ok") != "ok":
                    checks[name] = f"down: {said}"[:300]
        return checks

    async def _notice_redis_restart(self) -> None:
        """A Redis that is not the process the boards were verified on (it restarted, maybe
        faster than a ping could see it down) is recovering from now on, and the Redis
        watch is woken to rebuild it at once rather than at its next interval."""
        stage = self.recovery.stage("redis")
        if stage and not stage.startswith("down"):
            return  # being rebuilt, or rebuilt and waiting for the log's tail
        if self._consumer_started and not await self.store.is_verified():
            self.recovery.begin("redis", "restarted: restoring")
            self._wake_redis_watch.set()
        elif stage:
            self._wake_redis_watch.set()  # seen down, back: the watch decides

    async def recovering(self) -> dict[str, str]:
        """What is recovering and how far; reads may miss acknowledged runs until empty.
        Asks Redis whether it is still the verified process (a restart may be too quick
        for the health watch to have seen it down)."""
        if self._consumer_started and "redis" not in self.recovery.pending:
            with contextlib.suppress(Exception):  # Redis down: /readyz says so already
                await asyncio.wait_for(self._notice_redis_restart(), 1.0)
        return self.recovery.describe()

    async def _probe(self, timeout_s: float) -> dict[str, str]:
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
            check("redis", self.store.ping),
            check("postgres", self.pg.ping),
            check("nats", self.log.ping),
        )
        return dict(results)

    def consumer_lag(self) -> dict[str, Any] | None:
        return None if self.consumer is None else self.consumer.lag.as_dict()

    def degraded(self) -> list[str]:
        """Why this instance serves but the durable copy is behind or incomplete, if so."""
        if self.consumer is None:
            return []
        return self.consumer.lag.problems(self.settings.ready_max_lag_s)
