"""The process's connections and services, opened and closed together by the app lifespan."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from redis.asyncio import BlockingConnectionPool, Redis

from rankd import scripts
from rankd.api.auth import Authenticator
from rankd.services.names import NameCache
from rankd.services.reads import Reader
from rankd.services.registry import BoardRegistry
from rankd.services.submit import Submitter
from rankd.settings import Settings
from rankd.stores.postgres import PostgresStore
from rankd.stores.runlog import JetStreamLog


@dataclass
class Runtime:
    settings: Settings
    redis: Redis
    pg: PostgresStore
    log: JetStreamLog
    boards: BoardRegistry
    names: NameCache
    submitter: Submitter
    reader: Reader
    auth: Authenticator
    started: bool = field(default=False)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        if not (settings.redis_url and settings.postgres_url and settings.nats_url):
            raise ValueError("Runtime needs RANKD_REDIS_URL, RANKD_POSTGRES_URL and RANKD_NATS_URL")
        # A blocking pool: under a burst, requests wait for a connection instead of failing.
        pool = BlockingConnectionPool.from_url(
            settings.redis_url,
            max_connections=64,
            timeout=10,
            socket_timeout=5,
            socket_connect_timeout=5,
        )
        redis = Redis(connection_pool=pool)
        pg = PostgresStore(settings.postgres_url)
        log = JetStreamLog(
            settings.nats_url,
            stream=settings.stream,
            subject_prefix=settings.subject_prefix,
            timeout_s=settings.publish_timeout_s,
        )
        names = NameCache(pg, settings.name_cache_ttl_s)
        return cls(
            settings=settings,
            redis=redis,
            pg=pg,
            log=log,
            boards=BoardRegistry(pg, redis, settings.config_cache_ttl_s),
            names=names,
            submitter=Submitter(redis, log),
            reader=Reader(redis, names),
            auth=Authenticator(settings.admin_keys, settings.server_keys),
        )

    async def open(self) -> None:
        await asyncio.gather(self.pg.open(), self.log.open(), scripts.load_all(self.redis))
        self.started = True

    async def close(self) -> None:
        await asyncio.gather(
            self.log.close(), self.pg.close(), self.redis.aclose(), return_exceptions=True
        )

    async def readiness(self) -> dict[str, str]:
        """Each dependency's state: "ok" or why not."""

        async def check(name: str, probe: object) -> tuple[str, str]:
            try:
                await asyncio.wait_for(probe, timeout=2)  # type: ignore[arg-type]
                return name, "ok"
            except Exception as exc:
                return name, f"down: {type(exc).__name__}: {exc}"[:200]

        results = await asyncio.gather(
            check("redis", self.redis.ping()),
            check("postgres", self.pg.ping()),
            check("nats", self.log.ping()),
        )
        return dict(results)
