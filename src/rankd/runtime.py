"""The process's connections and services, opened and closed together by the app lifespan."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from rankd.aio import stop_tasks
from rankd.auth import Authenticator
from rankd.health import Health
from rankd.retention import parse_retention
from rankd.services.applier import Applier
from rankd.services.approx import Histograms
from rankd.services.consumer import DURABLE, LogConsumer, applied_through
from rankd.services.deletion import Deletions
from rankd.services.group_commit import GroupCommitter
from rankd.services.heals import Heals
from rankd.services.invalidation import Invalidations
from rankd.services.leagues import Leagues
from rankd.services.live import LiveHub
from rankd.services.log_retention import LogRetention
from rankd.services.moderation import Moderation
from rankd.services.names import NameCache
from rankd.services.player_streams import PlayerHub
from rankd.services.players import Players
from rankd.services.rate_limits import Rate, RateLimiter
from rankd.services.reads import Reader
from rankd.services.rebuild import Rebuilder
from rankd.services.rebuild.repairs import Repairs
from rankd.services.rebuild.restart import Restorer
from rankd.services.recovery import Recovery
from rankd.services.registry import RECREATE_SWEEP_S, BoardRegistry
from rankd.services.resharding import PASS_S, Resharding
from rankd.services.run_ids import RunIds
from rankd.services.seasons import SeasonJob
from rankd.services.segment_values import SegmentValues
from rankd.services.submit import Submitter
from rankd.services.tournaments import Tournaments
from rankd.services.webhooks import Webhooks
from rankd.settings import Settings
from rankd.stores.archive import ArchiveStore
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import Durable, JetStreamLog, RunLog
from rankd.stores.secrets import service_secret
from rankd.tokens import PlayerTokens

logger = logging.getLogger("rankd")

CLOSE_TIMEOUT_S = 5.0


@dataclass
class Runtime:
    settings: Settings
    redis: RedisStores
    pg: PostgresStore
    runlog: RunLog
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
    # periods whose rebuild died midway, rebuilt again (services/rebuild/repairs.py)
    repairs: Repairs
    consumer: LogConsumer | None = None
    # what is recovering and how far (services/recovery.py); /readyz is 503 until empty
    recovery: Recovery = field(default_factory=Recovery)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    health: Health = field(init=False)  # the probes, /readyz and the Redis watch
    players_live: PlayerHub = field(init=False)  # services/player_streams.py
    heals: Heals = field(init=False)  # rebuilds after run-id conflicts (services/heals.py)
    webhooks: Webhooks = field(init=False)  # the boards' webhooks (services/webhooks.py)
    resharding: Resharding = field(init=False)  # live moves (services/resharding.py)

    def __post_init__(self) -> None:
        self.submitter.on_busy = self.repairs.ask
        self.heals = Heals(self.rebuilder, self.settings.consumer_mark_wait_s)
        s = self.settings
        self.webhooks = Webhooks(self.pg, s.webhook_secret, s.webhook_timeout_s)
        settle_s = s.config_cache_ttl_s + 1.0  # every instance has reloaded a config
        self.resharding = Resharding(
            self.pg, self.redis, self.rebuilder, self.runlog, DURABLE, settle_s=settle_s
        )
        self.players_live = PlayerHub(
            self.boards.get,
            self.reader.ranks,
            self.reader.own_rank,
            self.moderation.bans.__contains__,
            self.settings.live_max_player_streams,
        )
        # they wake on the board streams' change notices (one listener per process)
        self.live.followers.append(self.players_live.notify)
        self.health = Health(
            self.settings,
            self.redis,
            self.pg,
            self.runlog,
            self.restorer,
            self.recovery,
            self._stopping,
        )

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        s = settings
        if not (s.redis_url and s.postgres_url and s.nats_url):
            raise ValueError("Runtime needs RANKD_REDIS_URL, RANKD_POSTGRES_URL and RANKD_NATS_URL")
        redis = RedisStores(
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
        runlog = JetStreamLog(
            s.nats_url,
            stream=s.stream,
            subject_prefix=s.subject_prefix,
            timeout_s=s.publish_timeout_s,
            replicas=s.stream_replicas,
        )
        names = NameCache(redis.profiles, s.name_cache_ttl_s, s.name_cache_bytes)
        # every instance has dropped a deleted board's cached config by then
        deletion_settle_s = max(s.config_cache_ttl_s + 1.0, s.ban_settle_s)
        boards = BoardRegistry(
            pg,
            redis,
            s.config_cache_ttl_s,
            max_bytes=s.config_cache_bytes,
            unknown_ttl_s=s.unknown_board_ttl_s,
            unknown_max_bytes=s.unknown_board_cache_bytes,
            recreate_wait_s=deletion_settle_s + RECREATE_SWEEP_S,
            memory_ratio=s.redis_memory_warn_ratio,
        )
        rebuilder = Rebuilder(redis, pg, boards, streams=s.rebuild_streams)
        players = Players(pg, redis.profiles, names, lambda: rebuilder.restoring_profiles)
        committer = GroupCommitter(
            runlog, max_in_flight=s.group_commit_max_in_flight, max_runs=s.group_commit_max_runs
        )
        run_ids = RunIds(redis.admission, pg, runlog, memory_s=s.run_memory_s, durable=DURABLE)

        async def log_applied_through() -> int | None:
            return await applied_through(runlog)

        # after a ban, a hold decision, a deletion or an erasure: the reader drops its tops
        invalidations = Invalidations()
        moderation = Moderation(
            redis.moves,
            redis.profiles,
            pg,
            boards,
            settle_s=s.ban_settle_s,
            applied_through=log_applied_through,
            invalidations=invalidations,
        )

        # applies everything to Redis (no trusted marks): replays, and a restart's tail
        applier = Applier(
            boards,
            redis.writes,
            redis.marks,
            redis.reads,
            pg,
            moderation,
            run_memory_s=s.run_memory_s,
        )
        deletions = Deletions(
            redis,
            pg,
            runlog,
            boards,
            moderation,
            names,
            settle_s=deletion_settle_s,
            scrub_interval_s=s.erasure_scrub_interval_s,
            run_id_bucket_ms=run_ids.bucket_ms,
        )
        repairs = Repairs(
            lambda board, window, period: rebuilder.rebuild(
                board=board, window=window, period=period
            ),
            redis.loads.is_torn,
        )
        runtime = cls(
            settings=s,
            deletions=deletions,
            repairs=repairs,
            redis=redis,
            pg=pg,
            runlog=runlog,
            boards=boards,
            names=names,
            players=players,
            submitter=Submitter(
                redis.writes,
                redis.reads,
                pg,
                committer,
                players,
                moderation,
                run_ids,
                SegmentValues(redis.admission, pg, s.segment_values_max),
                answer_timeout_s=s.redis_answer_timeout_s,
                tournaments=Tournaments(redis.tournaments, pg),
                leagues=Leagues(redis.leagues, pg),
            ),
            reader=Reader(
                redis.reads,
                names,
                s.top_cache_s,
                s.top_cache_bytes,
                archive=ArchiveStore(pg),
                archive_state_s=s.archive_state_cache_s,
                archive_state_bytes=s.archive_state_cache_bytes,
                restoring=rebuilder.is_restoring,
                histograms=Histograms(redis.histograms, reconcile_s=s.histogram_reconcile_s),
            ),
            auth=Authenticator(
                s.admin_keys,
                s.server_keys,
                PlayerTokens(s.player_token_secret, s.player_token_leeway_s)
                if s.player_token_secret
                else None,
            ),
            applier=applier,
            moderation=moderation,
            rebuilder=rebuilder,
            restorer=Restorer(redis, pg, runlog, rebuilder, applier, boards),
            seasons=SeasonJob(
                redis.reads,
                redis.seasons,
                pg,
                boards,
                rebuilder,
                log_applied_through,
                settle_ms=int(s.season_settle_s * 1000),
                run_memory_s=s.run_memory_s,
            ),
            limiter=RateLimiter(
                redis.limits,
                per_key=Rate(s.rate_key_per_s, s.rate_key_burst),
                per_address=Rate(s.rate_address_per_s, s.rate_address_burst),
                runs_per_key=Rate(s.rate_key_runs_per_s, s.rate_key_runs_burst),
                runs_per_player=Rate(s.rate_player_runs_per_s, s.rate_player_runs_burst),
                fail_open_s=s.rate_fail_open_s,
                refusal_memo_bytes=s.rate_refusal_memo_bytes,
                lease_s=s.rate_lease_s,
                lease_bytes=s.rate_lease_memo_bytes,
                timeout_s=min(1.0, s.redis_answer_timeout_s),  # best effort: fails open
            ),
            live=LiveHub(
                redis.notices, s.live_max_streams, max_per_address=s.live_max_streams_per_address
            ),
        )
        invalidations.subscribe(runtime.reader.forget_tops)
        # and every instance's live streams read again (a moderation change has no submit)
        invalidations.subscribe(runtime.live.announce)
        return runtime

    async def open(self, *, background: bool = True) -> None:
        """Connect; with ``background``, restore Redis if it changed and start the consumer,
        the Redis watch and the season job."""
        await asyncio.gather(self.pg.open(), self.runlog.open(), self.redis.open())
        await self.moderation.bans.refresh()  # before the first run is routed
        # every instance signs and verifies top-list cursors with one key
        self.reader.cursor_key = await service_secret(self.pg, "cursor")
        if not background:
            return
        await self.health.check_redis_settings()
        # A restarted Redis is rebuilt whole; otherwise any period whose key has gone (e.g.
        # deleted by hand) while PostgreSQL still holds its entries.
        if await self.redis.positions.is_verified():
            await self.rebuilder.rebuild(when="missing")
        else:
            # rebuilt in the background by the Redis watch (woken at once), so the periods
            # already in place are served while the rest load (reads of the others are
            # 503); /readyz says "redis" recovering until it is done and the tail applied
            self.recovery.begin("redis", "restarted: restoring")
            self.health.wake_redis_watch.set()
        # ready once the log's tail (whatever was logged but not applied yet) is applied
        self.recovery.begin("startup", "applying the log's tail")
        self.recovery.back("startup", await self.runlog.last_sequence())
        self._stopping.clear()
        self.consumer = self.log_consumer()
        await self.consumer.start()
        self.health.consumer_started = True
        self._tasks.append(asyncio.create_task(self.health.watch_redis(), name="redis-watch"))
        self._tasks.append(asyncio.create_task(self.health.watch_health(), name="health-watch"))
        bans = self.moderation.bans.run_forever(self.settings.ban_refresh_s, self._stopping)
        self._tasks.append(asyncio.create_task(bans, name="ban-refresh"))
        if self.reader.histograms is not None:  # one refresher per instance (approx ranks)
            refresh = self.reader.histograms.run(self._stopping)
            self._tasks.append(asyncio.create_task(refresh, name="histogram-refresh"))
        retention = LogRetention(self.runlog, DURABLE, parse_retention(self.settings.log_retention))
        trims = retention.run_forever(self.settings.log_retention_check_s, self._stopping)
        self._tasks.append(asyncio.create_task(trims, name="log-retention"))
        scrubber = self.deletions.run_scrubber(self._stopping)
        self._tasks.append(asyncio.create_task(scrubber, name="log-scrubber"))
        moves = self.resharding.run_forever(PASS_S, self._stopping)
        self._tasks.append(asyncio.create_task(moves, name="resharding"))
        if self.settings.season_job_interval_s > 0:
            job = self.seasons.run_forever(self.settings.season_job_interval_s, self._stopping)
            self._tasks.append(asyncio.create_task(job, name="season-job"))
        if self.settings.webhook_interval_s > 0:
            hooks = self.webhooks.run_forever(self.settings.webhook_interval_s, self._stopping)
            self._tasks.append(asyncio.create_task(hooks, name="webhooks"))

    def log_consumer(self) -> LogConsumer:
        s = self.settings
        durable = Durable(
            name=DURABLE,
            backoff_s=tuple(s.consumer_backoff_s),
            max_deliver=s.consumer_max_deliver,
            max_ack_pending=s.consumer_max_ack_pending,
        )
        return LogConsumer(
            self.runlog,
            Applier(
                self.boards,
                self.redis.writes,
                self.redis.marks,
                self.redis.reads,
                self.pg,
                self.moderation,
                mark_wait_s=s.consumer_mark_wait_s,
                run_memory_s=s.run_memory_s,
                heal=self.heals.ask,
                # a board whose period refuses writes waits alone; the others go on
                defer_busy=True,
                on_busy=self.repairs.ask,
            ),
            self.pg,
            self.redis.positions,
            durable,
            batch=s.consumer_batch,
            lag_refresh_s=s.lag_refresh_s,
        )

    async def close(self) -> None:
        """Stop the background work, then the connections; bounded, so a task stuck in a
        driver call cannot hold up a shutdown."""
        self._stopping.set()
        self.health.wake_redis_watch.set()
        await self.repairs.close()
        stuck = await stop_tasks([*self._tasks, *self.heals.tasks], CLOSE_TIMEOUT_S)
        self._tasks.clear()
        stuck += await self.moderation.close()
        stuck += await self.deletions.close()
        await self.players_live.close_all()
        await self.webhooks.close()
        await self.live.close()
        if self.consumer is not None:
            stuck += await self.consumer.stop(CLOSE_TIMEOUT_S)
        if stuck:
            logger.warning(
                "shutdown: %s did not stop within %.0f s", ", ".join(stuck), CLOSE_TIMEOUT_S
            )
        closing = (self.runlog.close(), self.pg.close(), self.redis.close())
        await asyncio.wait([asyncio.ensure_future(c) for c in closing], timeout=CLOSE_TIMEOUT_S)

    async def readiness(self) -> dict[str, str]:  # each dependency: "ok" or why not
        return await self.health.readiness()

    async def recovering(self) -> dict[str, str]:  # what is recovering and how far
        return await self.health.recovering()

    async def check_redis_memory(self) -> float:
        return await self.health.check_redis_memory()

    def consumer_lag(self) -> dict[str, Any] | None:
        return None if self.consumer is None else self.consumer.lag.as_dict()

    def degraded(self) -> list[str]:
        """Why this instance serves but the durable copy is behind or incomplete, or a
        board period refuses writes while it is repaired, if so."""
        if self.consumer is None:
            return self.repairs.describe()
        return self.consumer.lag.problems(self.settings.ready_max_lag_s) + self.repairs.describe()
