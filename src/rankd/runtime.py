"""The process's connections and services, opened and closed together by the app lifespan."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis

from rankd import scripts
from rankd.api.auth import Authenticator
from rankd.services.applier import Applier
from rankd.services.consumer import DURABLE, LogConsumer
from rankd.services.names import NameCache
from rankd.services.reads import Reader
from rankd.services.rebuild import Rebuilder
from rankd.services.registry import BoardRegistry
from rankd.services.submit import Submitter
from rankd.settings import Settings
from rankd.stores.postgres import PostgresStore
from rankd.stores.runlog import Durable, JetStreamLog, RunLog

log = logging.getLogger("rankd")


@dataclass
class Runtime:
    settings: Settings
    redis: Redis
    pg: PostgresStore
    log: RunLog
    boards: BoardRegistry
    names: NameCache
    submitter: Submitter
    reader: Reader
    auth: Authenticator
    applier: Applier
    rebuilder: Rebuilder
    consumer: LogConsumer | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        if not (settings.redis_url and settings.postgres_url and settings.nats_url):
            raise ValueError("Runtime needs RANKD_REDIS_URL, RANKD_POSTGRES_URL and RANKD_NATS_URL")
        # A blocking pool: under a burst, requests wait for a connection instead of failing.
        # No socket_timeout: redis-py wraps every read in an asyncio timeout for it, the
        # largest single cost in the read profile; a dead Redis still fails fast (reset).
        pool = BlockingConnectionPool.from_url(
            settings.redis_url,
            max_connections=64,
            timeout=10,
            socket_connect_timeout=5,
            socket_keepalive=True,
        )
        redis = Redis(connection_pool=pool)
        pg = PostgresStore(settings.postgres_url)
        log = JetStreamLog(
            settings.nats_url,
            stream=settings.stream,
            subject_prefix=settings.subject_prefix,
            timeout_s=settings.publish_timeout_s,
        )
        names = NameCache(pg, redis, settings.name_cache_ttl_s)
        boards = BoardRegistry(pg, redis, settings.config_cache_ttl_s)
        submitter = Submitter(redis, log)
        return cls(
            settings=settings,
            redis=redis,
            pg=pg,
            log=log,
            boards=boards,
            names=names,
            submitter=submitter,
            reader=Reader(redis, names, settings.top_cache_s),
            auth=Authenticator(settings.admin_keys, settings.server_keys),
            applier=Applier(boards, submitter, pg),
            rebuilder=Rebuilder(redis, pg, boards, submitter),
        )

    async def open(self, *, background: bool = True) -> None:
        """Connect; with ``background``, restore Redis if it changed and start the consumer."""
        await asyncio.gather(self.pg.open(), self.log.open(), scripts.load_all(self.redis))
        if not background:
            return
        # A restarted Redis is rebuilt whole; otherwise any period whose key has gone (e.g.
        # deleted by hand) while PostgreSQL still holds its entries.
        if await self.rebuilder.rebuild(when="redis_changed") is None:
            await self.rebuilder.rebuild(when="missing")
        self.consumer = self.log_consumer()
        await self.consumer.start()
        self._tasks.append(asyncio.create_task(self._watch_redis(), name="redis-watch"))

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
            self.applier,
            self.pg,
            durable,
            batch=s.consumer_batch,
            lag_refresh_s=s.lag_refresh_s,
        )

    async def _watch_redis(self) -> None:
        """Rebuild from PostgreSQL whenever Redis comes back as a different process."""
        while True:
            await asyncio.sleep(self.settings.redis_watch_interval_s)
            try:
                await self.rebuilder.rebuild(when="redis_changed")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("redis watch: %r", exc)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.consumer is not None:
            await self.consumer.stop()
        await asyncio.gather(
            self.log.close(), self.pg.close(), self.redis.aclose(), return_exceptions=True
        )

    async def readiness(self) -> dict[str, str]:
        """Each dependency's state: "ok" or why not."""

        async def check(name: str, probe: Awaitable[Any]) -> tuple[str, str]:
            try:
                await asyncio.wait_for(probe, timeout=2)
                return name, "ok"
            except Exception as exc:
                return name, f"down: {type(exc).__name__}: {exc}"[:200]

        results = await asyncio.gather(
            check("redis", self.redis.ping()),
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
