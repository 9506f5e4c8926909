"""Configuration, read once from the environment (prefix ``RANKD_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RANKD_", extra="ignore")

    # External services; when all are unset `rankd serve` starts embedded ones.
    redis_url: str | None = None
    postgres_url: str | None = None
    nats_url: str | None = None
    data_dir: Path = Path(".rankd")

    # Comma-separated bearer keys per role.
    admin_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    server_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # JetStream stream holding every accepted run.
    stream: str = "RUNS"
    subject_prefix: str = "runs"
    # Copies of the stream JetStream keeps (when it creates the stream): 3 on a three-node
    # cluster, so one node's loss loses no acknowledged run; 1 on a single server.
    stream_replicas: int = Field(1, ge=1, le=5)
    publish_timeout_s: float = 5.0

    # Group commit: log messages in flight per board, and most runs one message carries.
    group_commit_max_in_flight: int = Field(4, ge=1, le=64)
    group_commit_max_runs: int = Field(2000, ge=1, le=100_000)

    # Connection pools. A request waits this long for a pooled connection before 503.
    redis_max_connections: int = Field(64, ge=1)
    # concurrent requests' Redis calls share pipelines, at most this many on the wire at
    # once (stores/redis_batch.py); 0: every request sends its own
    redis_batch_in_flight: int = Field(4, ge=0, le=64)
    # On a Redis Cluster, send plain read commands to replicas too. Script calls (a submit's
    # answer, a player's own view, top lists) always go to the primary.
    redis_read_from_replicas: bool = False
    redis_pool_timeout_s: float = 10.0
    postgres_pool_min: int = Field(1, ge=0)
    postgres_pool_max: int = Field(10, ge=1)
    postgres_pool_timeout_s: float = 5.0

    # The log consumer: one durable JetStream consumer that every instance pulls from. The
    # backoff, max_deliver and max_ack_pending apply when the consumer is first created.
    consumer_batch: int = 100  # messages per fetch; small keeps each event-loop turn short
    # Redelivery of a batch that was not acked: fast first (a crashed instance), then slower.
    consumer_backoff_s: list[float] = Field(default_factory=lambda: [2.0, 5.0, 10.0, 30.0, 60.0])
    consumer_max_deliver: int = 100  # deliveries of one message before the log gives up
    consumer_max_ack_pending: int = 20_000  # delivered, not yet acked, over every instance
    lag_refresh_s: float = 2.0  # how often the lag gauges (and the parked count) refresh
    replay_batch: int = 1000  # messages per fetch in `rankd replay`
    # /readyz says "degraded" once the oldest run not yet in PostgreSQL is older than this.
    ready_max_lag_s: float = 60.0

    # In-process caches. Each is bounded in bytes (estimated); together about 54 MiB.
    # After config_cache_ttl_s a cached board config is refreshed in the background.
    config_cache_ttl_s: float = 2.0
    config_cache_bytes: int = 4 << 20
    # An unknown board id is answered 404 from memory for this long.
    unknown_board_ttl_s: float = 1.0
    unknown_board_cache_bytes: int = 1 << 20
    # How long a process trusts its cached player names.
    name_cache_ttl_s: float = 30.0
    name_cache_bytes: int = 32 << 20
    # How long a rendered top list is reused by this process (0 turns it off).
    top_cache_s: float = 0.2
    top_cache_bytes: int = 16 << 20
    # How long a process remembers that a period is in the periods index.
    periods_index_memo_s: float = 60.0
    periods_index_memo_bytes: int = 1 << 20

    # HTTP server limits, per process: a request's headers must arrive within
    # http_header_timeout_s and its body within http_body_timeout_s of them, or the
    # connection is closed (408); past http_max_connections open connections new ones get
    # 503; idle keep-alive connections close after http_keep_alive_s.
    http_header_timeout_s: float = Field(10.0, gt=0)
    http_body_timeout_s: float = Field(30.0, gt=0)
    http_max_connections: int = Field(4096, ge=1)
    # longer than a load balancer's usual 60 s idle timeout, so the balancer (or a client
    # pool) closes idle keep-alive connections first, never mid-request
    http_keep_alive_s: int = Field(75, ge=1)

    # Request rate limits, counted in Redis so every instance shares them (GCRA; see
    # services/rate_limits.py): per bearer key, and per client address for requests without
    # a valid key. Requests per second (0 turns that limit off) and burst (requests an idle
    # key or address may make at once). Generous by default: a process serves a few thousand
    # requests a second.
    rate_key_per_s: float = Field(10_000.0, ge=0, le=1_000_000)
    rate_key_burst: int = Field(20_000, ge=1, le=10_000_000)
    rate_address_per_s: float = Field(20_000.0, ge=0, le=1_000_000)
    rate_address_burst: int = Field(40_000, ge=1, le=10_000_000)
    # How many proxies in front of Rankd append the client's address to X-Forwarded-For; the
    # address that many entries from the right is the client's (0: the header is ignored,
    # since anyone can send it).
    rate_trusted_proxies: int = Field(0, ge=0, le=16)
    # After Redis fails to answer a rate check, requests go unchecked this long (fail open: a
    # Redis outage never becomes 429s, and requests do not wait on it twice).
    rate_fail_open_s: float = Field(1.0, ge=0)
    # Refusals remembered by the process until their retry time, so a flood is refused
    # without a round trip each (about 200 bytes a key or address).
    rate_refusal_memo_bytes: int = Field(1 << 20, ge=0)
    # A process pays Redis for this long's worth of an identity's rate at once (at most its
    # burst) and spends it locally (services/rate_limits.py). 0: one Redis call per
    # request. Leases held are bounded like the refusals.
    rate_lease_s: float = Field(0.05, ge=0, le=10)
    rate_lease_memo_bytes: int = Field(1 << 20, ge=0)

    # Serve the hottest routes (top, a player, a single submit) without FastAPI's router when
    # their parameters are plainly valid (api/fastpath.py); off: every request goes through
    # FastAPI (the answers are the same; this is for comparing the two)
    fast_routes: bool = True
    # Live event streams (GET /v1/boards/{id}/events): at most live_max_streams per process
    # (past that, 503); a heartbeat comment every live_heartbeat_s; a client whose send
    # does not complete within live_send_timeout_s (its socket buffer stays full) is dropped.
    live_max_streams: int = Field(2000, ge=1)
    live_heartbeat_s: float = Field(15.0, gt=0)
    live_send_timeout_s: float = Field(10.0, gt=0)

    # Log level of the service (and uvicorn's own loggers).
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    # One line per request at info (logger rankd.access): method, path, status, ms.
    access_log: bool = True

    # How often each instance checks that Redis is still the process the boards were
    # verified on (a restart triggers a rebuild from PostgreSQL).
    redis_watch_interval_s: float = 1.0
    # The submit path marks the runs it applied to Redis (kept this long); the log consumer
    # writes Redis only for runs without a mark, waiting up to consumer_mark_wait_s for the
    # marks of runs received that recently (see services/applier.py)
    applied_marks_keep_s: float = Field(15.0, gt=0)
    consumer_mark_wait_s: float = Field(2.0, ge=0)
    # how often each instance asks PostgreSQL for bans made elsewhere, and when a ban's
    # second sweep runs (after every instance has surely refreshed; well inside 1 s)
    ban_refresh_s: float = Field(0.2, gt=0)
    ban_settle_s: float = Field(0.6, ge=0)

    # A run resent without ended_at within this long keeps its first receipt's time (0: off)
    first_receipt_keep_s: float = Field(120.0, ge=0)

    # Runs may end at most this far in the future (clock skew between game servers and us).
    max_future_skew_s: int = 300

    # The season job (services/seasons.py): how often each instance tries a pass (one
    # instance at a time runs it; 0 turns it off in this process), and how long after a
    # period's grace it waits before freezing it (a run received just before the grace
    # ended may still be on its way through the log).
    season_job_interval_s: float = Field(30.0, ge=0)
    season_settle_s: float = Field(15.0, ge=0)
    # How long a process trusts what it read about a closed period's archive state.
    archive_state_cache_s: float = 5.0
    archive_state_cache_bytes: int = 1 << 20

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("admin_keys", "server_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value
