"""The process's connections and services, opened and closed together by the app lifespan."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from rankd.aio import stop_tasks, wait_or_stop
from rankd.api.auth import Authenticator
from rankd.services.applier import Applier
from rankd.services.consumer import DURABLE, LogConsumer, applied_through
from rankd.services.group_commit import GroupCommitter
from rankd.services.live import LiveHub
from rankd.services.moderation import Moderation
from rankd.services.names import NameCache
from rankd.services.players import Players
from rankd.services.rate_limits import Rate, RateLimiter
from rankd.services.reads import Reader
from rankd.services.rebuild import Rebuilder
from rankd.services.registry import BoardRegistry
from rankd.services.seasons import SeasonJob
from rankd.services.submit import Submitter
from rankd.settings import Settings
from rankd.stores.archive import ArchiveStore
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis_store import RedisStore
from rankd.stores.runlog import Durable, JetStreamLog, RunLog

log = logging.getLogger("rankd")

CLOSE_TIMEOUT_S = 5.0


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
    seasons: SeasonJob
    moderation: Moderation
    limiter: RateLimiter
    live: LiveHub
    consumer: LogConsumer | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

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
        players = Players(pg, store, names)
        committer = GroupCommitter(
            log, max_in_flight=s.group_commit_max_in_flight, max_runs=s.group_commit_max_runs
        )
        rebuilder = Rebuilder(store, pg, boards)

        async def log_applied_through() -> int | None:
            return await applied_through(log)

        moderation = Moderation(
            store, pg, boards, settle_s=s.ban_settle_s, applied_through=log_applied_through
        )

        return cls(
            settings=s,
            store=store,
            pg=pg,
            log=log,
            boards=boards,
            names=names,
            players=players,
            submitter=Submitter(store, pg, committer, players, moderation, s.first_receipt_keep_s),
            reader=Reader(
                store,
                names,
                s.top_cache_s,
                s.top_cache_bytes,
                archive=ArchiveStore(pg),
                archive_state_s=s.archive_state_cache_s,
                archive_state_bytes=s.archive_state_cache_bytes,
            ),
            auth=Authenticator(s.admin_keys, s.server_keys),
            applier=Applier(boards, store, pg, moderation),
            moderation=moderation,
            rebuilder=rebuilder,
            seasons=SeasonJob(
                store,
                pg,
                boards,
                rebuilder,
                log_applied_through,
                settle_ms=int(s.season_settle_s * 1000),
            ),
            limiter=RateLimiter(
                store,
                per_key=Rate(s.rate_key_per_s, s.rate_key_burst),
                per_address=Rate(s.rate_address_per_s, s.rate_address_burst),
                fail_open_s=s.rate_fail_open_s,
                refusal_memo_bytes=s.rate_refusal_memo_bytes,
                lease_s=s.rate_lease_s,
                lease_bytes=s.rate_lease_memo_bytes,
            ),
            live=LiveHub(store, s.live_max_streams),
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
        if await self.rebuilder.rebuild(when="redis_changed") is None:
            await self.rebuilder.rebuild(when="missing")
        self._stopping.clear()
        self.consumer = self.log_consumer()
        await self.consumer.start()
        self._tasks.append(asyncio.create_task(self._watch_redis(), name="redis-watch"))
        bans = self.moderation.bans.run_forever(self.settings.ban_refresh_s, self._stopping)
        self._tasks.append(asyncio.create_task(bans, name="ban-refresh"))
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
            ),
            self.pg,
            durable,
            batch=s.consumer_batch,
            lag_refresh_s=s.lag_refresh_s,
        )

    async def _watch_redis(self) -> None:
        """Rebuild from PostgreSQL whenever Redis comes back as a different process."""
        while not await wait_or_stop(self._stopping, self.settings.redis_watch_interval_s):
            try:
                await self.rebuilder.rebuild(when="redis_changed")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("redis watch: %r", exc)

    async def close(self) -> None:
        """Stop the background work, then the connections; bounded, so a task stuck in a
        driver call cannot hold up a shutdown."""
        self._stopping.set()
        stuck = await stop_tasks(self._tasks, CLOSE_TIMEOUT_S)
        self._tasks.clear()
        stuck += await self.moderation.close()
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
        """Each dependency's state: "ok" or why not."""

        async def check(name: str, probe: Awaitable[Any]) -> tuple[str, str]:
            try:
                await asyncio.wait_for(probe, timeout=2)
                return name, "ok"
            except Exception as exc:
                cause = exc.__cause__ or exc
                return name, f"down: {type(cause).__name__}: {cause}"[:200]

        results = await asyncio.gather(
            check("redis", self.store.ping()),
            check("postgres", self.pg.ping()),
            check("nats", self.log.ping()),
        )
        return dict(results)

    def consumer_lag(self) -> dict[str, Any] | None:
        return None if self.consumer is None else self.consumer.lag.as_dict()

    def degraded(self) -> list[str]:
        """Why this instance serves but the durable copy is behind or incomplete, if so."""
        if self.consumer is None:
            return []
        return self.consumer.lag.problems(self.settings.ready_max_lag_s)
