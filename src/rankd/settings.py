"""Configuration, read once from the environment (prefix ``RANKD_``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from rankd.datadir import not_a_folder
from rankd.formats import MEMORY_SIZE


class Settings(BaseSettings):
    # inf and nan are no number of seconds or bytes (int(inf * 1000) fails deep in start-up)
    model_config = SettingsConfigDict(env_prefix="RANKD_", extra="ignore", allow_inf_nan=False)

    # External services; when all are unset `rankd serve` starts embedded ones.
    redis_url: str | None = None
    postgres_url: str | None = None
    nats_url: str | None = None
    data_dir: Path = Path(".rankd")
    # Set by `rankd serve` on its embedded default, not by hand: where the supervisor of
    # the embedded servers says which one is restarting (read by /readyz).
    embedded_status_file: Path | None = None

    # Comma-separated bearer keys per role.
    admin_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    server_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Player tokens (HS256 JWTs, rankd/tokens.py): comma-separated secrets of at least 32
    # bytes; the first signs, any verifies (rotation). Unset: player tokens are off.
    player_token_secret: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Webhooks (services/webhooks.py): the signing secret (unset: boards may not set hooks),
    # how often each instance sends what is due (0: never), how long a receiver may take.
    webhook_secret: str | None = Field(None, min_length=32)
    webhook_interval_s: float = Field(1.0, ge=0)
    webhook_timeout_s: float = Field(10.0, gt=0, le=120)
    # clock skew allowed on a token's exp, nbf and iat
    player_token_leeway_s: int = Field(30, ge=0, le=300)
    # Origins a browser page may call the API from (CORS): comma-separated
    # scheme://host[:port], or * for public reads only (GET, no Authorization). Unset: none.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # JetStream stream holding every accepted run.
    stream: str = Field("RUNS", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    subject_prefix: str = Field("runs", pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
    publish_timeout_s: float = Field(5.0, gt=0, le=300)
    # a submit's Redis work on either side of the log, at most (services/submit.py): past it
    # 503, so a stalled Redis never holds a request for the whole stall
    redis_answer_timeout_s: float = Field(5.0, gt=0, le=300)
    # How long, and how much, of the log is kept: an age and/or a size (7d, 20gb, 7d,20gb);
    # never a message the durable copy has not applied (services/log_retention.py). Each
    # instance looks every log_retention_check_s.
    log_retention: str = "7d"
    log_retention_check_s: float = Field(60.0, gt=0)
    # Copies of the stream JetStream keeps (when it creates the stream): 3 on a three-node
    # cluster, so one node's loss loses no acknowledged run; 1 on a single server.
    stream_replicas: int = Field(1, ge=1, le=5)

    # Group commit: log messages in flight per board, and most runs one message carries.
    group_commit_max_in_flight: int = Field(4, ge=1, le=64)
    group_commit_max_runs: int = Field(2000, ge=1, le=100_000)

    # Connection pools. A request waits this long for a pooled connection before 503.
    redis_max_connections: int = Field(64, ge=1)
    # concurrent requests' Redis calls share pipelines, at most this many on the wire at
    # once (stores/redis/batch.py); 0: every request sends its own
    redis_batch_in_flight: int = Field(4, ge=0, le=64)
    # On a Redis Cluster, send plain read commands to replicas too; on a Sentinel group, the
    # read paths' plain reads of boards and names (stores/redis/replicas.py ReplicaReads). Script
    # calls (a submit's answer, a player's own view, top lists) always go to the primary.
    redis_read_from_replicas: bool = False
    redis_pool_timeout_s: float = Field(10.0, gt=0)
    # A rebuild loads a large period (50,000 entries and more) with this many streams at
    # once, each its own PostgreSQL connection and Redis connections (1: one stream).
    rebuild_streams: int = Field(1, ge=1, le=16)
    postgres_pool_min: int = Field(1, ge=0)
    postgres_pool_max: int = Field(10, ge=1)
    postgres_pool_timeout_s: float = Field(5.0, gt=0)

    # The log consumer: one durable JetStream consumer that every instance pulls from. The
    # backoff, max_deliver and max_ack_pending apply when the consumer is first created.
    # messages per fetch; small keeps each event-loop turn short
    consumer_batch: int = Field(100, ge=1, le=10_000)
    # Redelivery of a batch that was not acked: fast first (a crashed instance), then slower.
    consumer_backoff_s: list[float] = Field(default_factory=lambda: [2.0, 5.0, 10.0, 30.0, 60.0])
    # deliveries of one message before the log gives up; delivered, not yet acked, over
    # every instance; how often the lag gauges (and the parked count) refresh
    # (JetStream refuses a consumer past these bounds, or with max_deliver <= len(backoff))
    consumer_max_deliver: int = Field(100, ge=1, le=1_000_000)
    consumer_max_ack_pending: int = Field(20_000, ge=1, le=10_000_000)
    lag_refresh_s: float = Field(2.0, gt=0)
    replay_batch: int = Field(1000, ge=1, le=100_000)  # messages per fetch in `rankd replay`
    # /readyz says "degraded" once the oldest run not yet in PostgreSQL is older than this.
    ready_max_lag_s: float = Field(60.0, gt=0)

    # In-process caches. Each is bounded in bytes (estimated); together about 54 MiB.
    # After config_cache_ttl_s a cached board config is refreshed in the background.
    config_cache_ttl_s: float = Field(2.0, ge=0)
    config_cache_bytes: int = Field(4 << 20, ge=0)
    # An unknown board id is answered 404 from memory for this long.
    unknown_board_ttl_s: float = Field(1.0, ge=0)
    unknown_board_cache_bytes: int = Field(1 << 20, ge=0)
    # How long a process trusts its cached player names.
    name_cache_ttl_s: float = Field(30.0, ge=0)
    name_cache_bytes: int = Field(32 << 20, ge=0)
    # How long a rendered top list is reused by this process (0 turns it off).
    top_cache_s: float = Field(0.2, ge=0)
    top_cache_bytes: int = Field(16 << 20, ge=0)
    # How long a process remembers that a period is in the periods index.
    periods_index_memo_s: float = Field(60.0, ge=0)
    periods_index_memo_bytes: int = Field(1 << 20, ge=0)

    # HTTP server limits, per process: a request's headers must arrive within
    # http_header_timeout_s and its body within http_body_timeout_s of them, or the
    # connection is closed (408); past http_max_connections open connections new ones get
    # 503; idle keep-alive connections close after http_keep_alive_s.
    http_header_timeout_s: float = Field(10.0, gt=0)
    http_body_timeout_s: float = Field(30.0, gt=0)
    http_max_connections: int = Field(4096, ge=1)
    # One client address may hold at most this many of them (0: no cap); past it a new one
    # gets 429. Behind a proxy that opens many connections itself, raise it or set 0.
    http_max_connections_per_address: int = Field(256, ge=0)
    # Past http_max_connections this many more are still taken, for /healthz and /readyz
    # only (any other request on them gets 503), so a full process answers its probes.
    http_probe_connections: int = Field(64, ge=0, le=4096)
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
    # Runs per second a key may submit (each run of a batch counts; 0 turns it off), and
    # how many an idle key may submit at once; counted besides the key's request rate.
    rate_key_runs_per_s: float = Field(50_000.0, ge=0, le=10_000_000)
    rate_key_runs_burst: int = Field(100_000, ge=1, le=100_000_000)
    # Runs per second one player may submit with a player token (client_submits boards),
    # whatever device or address they come from, and how many at once after a pause.
    rate_player_runs_per_s: float = Field(1.0, ge=0, le=1_000)
    rate_player_runs_burst: int = Field(10, ge=1, le=10_000)
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
    # of which one client address may hold at most this many (past it, 429; 0: no cap)
    live_max_streams_per_address: int = Field(20, ge=0)
    # Player event streams (GET /v1/players/{id}/events) per process, past that 503; each
    # holds a queue of at most 64 events and a rank per board window and friend it follows,
    # and costs about 56 KiB with its connection (bench/player_events.py): 560 MiB at most
    live_max_player_streams: int = Field(10_000, ge=1)
    live_heartbeat_s: float = Field(15.0, gt=0)
    live_send_timeout_s: float = Field(10.0, gt=0)

    # Log level of the service (and uvicorn's own loggers).
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    # One line per request at info (logger rankd.access): method, path, status, ms.
    access_log: bool = True

    # How often each instance checks that Redis is still the process the boards were
    # verified on (a restart triggers a rebuild from PostgreSQL).
    redis_watch_interval_s: float = Field(1.0, gt=0)
    # How often the periods read with accuracy=approx have their sharded histograms
    # recounted from their standings and repaired (services/approx.py); 0: never.
    histogram_reconcile_s: float = Field(300.0, ge=0)
    # Warn (log and rankd_redis_memory_used_ratio) once Redis uses this share of its
    # maxmemory, and refuse a resharding that would pass it: past maxmemory Redis refuses
    # writes (noeviction), submits answer 503. The embedded Redis's: RANKD_REDIS_MAX_MEMORY.
    redis_memory_warn_ratio: float = Field(0.8, gt=0, le=1)
    redis_memory_check_s: float = Field(10.0, gt=0)
    # checked here with the rest; the embedded Redis reads it (embedded/redis_server.py)
    redis_max_memory: str = "2gb"
    # The submit path marks the runs it applied to Redis (kept this long); the log consumer
    # writes Redis only for runs without a mark, waiting up to consumer_mark_wait_s for the
    # marks of runs received that recently (see services/applier.py)
    applied_marks_keep_s: float = Field(15.0, gt=0, le=3600)
    consumer_mark_wait_s: float = Field(2.0, ge=0)
    # how often each instance asks PostgreSQL for bans made elsewhere, and when a ban's
    # second sweep runs (after every instance has surely refreshed; well inside 1 s)
    ban_refresh_s: float = Field(0.2, gt=0)
    ban_settle_s: float = Field(0.6, ge=0)
    # After an erasure (DELETE /v1/players/{id}) the log's copies of the player's runs are
    # securely deleted at once, and retried this often until done (services/deletion.py)
    erasure_scrub_interval_s: float = Field(60.0, gt=0)

    # How long a run id's first content stays binding on its board (services/run_ids.py): a
    # resend with another player, score or ended_at is refused (409 run_conflict) for at
    # least this long and at most a quarter longer; a resend without ended_at keeps the
    # first send's. The contract asks for at least a day; every instance must agree on it.
    run_memory_s: float = Field(86_400.0, ge=1, le=366 * 86_400)  # Redis expiries past it fail

    # Distinct values each segment dimension of a board may take (every value makes keys in
    # every window); a run bringing one more is refused with 400 (services/segment_values.py)
    segment_values_max: int = Field(10_000, ge=1, le=10_000_000)

    # Runs may end at most this far in the future (clock skew between game servers and us).
    max_future_skew_s: int = Field(300, ge=0)

    # The season job (services/seasons.py): how often each instance tries a pass (one
    # instance at a time runs it; 0 turns it off in this process), and how long after a
    # period's grace it waits before freezing it (a run received just before the grace
    # ended may still be on its way through the log).
    season_job_interval_s: float = Field(30.0, ge=0)
    season_settle_s: float = Field(15.0, ge=0)
    # How long a process trusts what it read about a closed period's archive state.
    archive_state_cache_s: float = Field(5.0, ge=0)
    archive_state_cache_bytes: int = Field(1 << 20, ge=0)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        # redis://, rediss://, redis+cluster://, redis+sentinel:// (stores/redis/connection.py)
        from rankd.stores.redis.url import parse_redis_url

        try:
            parse_redis_url(value.strip())
        except ValueError as exc:  # one line naming the fault (settings_error names the variable)
            raise ValueError(str(exc).removeprefix("RANKD_REDIS_URL: ")) from None
        return value.strip()

    @field_validator("postgres_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        return _check_urls(value, POSTGRES_SCHEMES, "postgresql://user@host:port/db", single=True)

    @field_validator("nats_url")
    @classmethod
    def _nats_url(cls, value: str | None) -> str | None:
        return _check_urls(value, NATS_SCHEMES, "nats://host:port[,nats://host:port...]")

    @field_validator("log_retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        from rankd.retention import parse_retention

        parse_retention(value)  # ValueError: one line naming the variable (settings_error)
        return value.strip()

    @field_validator("redis_max_memory")
    @classmethod
    def _max_memory(cls, value: str) -> str:
        if not MEMORY_SIZE.fullmatch(value.strip()):
            raise ValueError("must be a size like 512mb or 4gb (a plain number is bytes)")
        return value.strip()

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return Path(".rankd")  # empty, like unset: the default
        if isinstance(value, str | Path) and (problem := not_a_folder(Path(value))):
            raise ValueError(problem)
        return value

    @field_validator("consumer_backoff_s")
    @classmethod
    def _backoff(cls, value: list[float]) -> list[float]:
        if any(not 0 < delay <= 86_400 for delay in value):
            raise ValueError("each delay must be over 0 and at most 86400 s, like [2, 5, 10]")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("admin_keys", "server_keys", "player_token_secret", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @field_validator("player_token_secret")
    @classmethod
    def _secrets(cls, value: list[str]) -> list[str]:
        from rankd.tokens import MIN_SECRET_BYTES

        if any(len(secret.encode()) < MIN_SECRET_BYTES for secret in value):
            raise ValueError(
                f"each secret must be at least {MIN_SECRET_BYTES} bytes (openssl rand -hex 32)"
            )
        return value

    @field_validator("admin_keys", "server_keys")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        # a header carries printable ASCII: any other key could never be presented
        if any(not (key.isascii() and key.isprintable()) for key in value):
            raise ValueError("each key must be printable ASCII, as an Authorization header is")
        return value

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        origins = [o.strip() for o in value.split(",") if o.strip()]
        if "*" in origins and len(origins) > 1:
            raise ValueError("either * (public reads from any origin) or a list of origins")
        for origin in origins:
            port = re.search(r":([0-9]+)$", origin)
            if origin != "*" and (
                not _ORIGIN.fullmatch(origin) or int(port[1] if port else 0) > 65535
            ):
                raise ValueError(f"{origin[:80]!r} is not an origin like https://game.example:8443")
        return origins

    @model_validator(mode="after")
    def _together(self) -> Settings:
        """Settings each fine but not together: one line naming each variable."""
        from rankd.stores.redis.url import parse_redis_url

        s, found = self, []
        if s.postgres_pool_min > s.postgres_pool_max:
            found.append(_pair(s, "postgres_pool_min", "at most", "postgres_pool_max"))
        if s.consumer_mark_wait_s >= s.applied_marks_keep_s:  # its marks are gone by then
            found.append(_pair(s, "consumer_mark_wait_s", "less than", "applied_marks_keep_s"))
        if s.ban_settle_s <= s.ban_refresh_s:  # a ban's 2nd sweep waits for every refresh
            found.append(_pair(s, "ban_settle_s", "more than", "ban_refresh_s"))
        if s.consumer_max_deliver <= len(s.consumer_backoff_s):  # JetStream refuses that
            found.append(
                _pair(s, "consumer_max_deliver", "more than the delays in", "consumer_backoff_s")
            )
        if set(s.admin_keys) & set(s.server_keys):  # such a key would act as admin
            found.append("RANKD_ADMIN_KEYS and RANKD_SERVER_KEYS share a key")
        single = s.redis_url is not None and parse_redis_url(s.redis_url).mode == "single"
        if s.redis_read_from_replicas and single:
            found.append("RANKD_REDIS_READ_FROM_REPLICAS: RANKD_REDIS_URL has no replicas")
        if found:
            raise ValueError("; ".join(found))
        return self


def _pair(settings: Settings, a: str, how: str, b: str) -> str:
    shown = [str(getattr(settings, name)).replace(" ", "") for name in (a, b)]
    return f"RANKD_{a.upper()} ({shown[0]}) must be {how} RANKD_{b.upper()} ({shown[1]})"


# scheme://host[:port], as a browser sends it in Origin (no path, no trailing slash)
_ORIGIN = re.compile(
    r"https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)

# What each URL may look like (the drivers accept these; anything else fails late and
# obscurely, so it is refused at start with one line).
POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})
NATS_SCHEMES = frozenset({"nats", "tls", "ws", "wss"})
CREDENTIALS = re.compile(r"(?<=://)[^/]*@")  # a URL's user and password, never shown


def _check_urls(
    value: str | None, schemes: frozenset[str], form: str, *, single: bool = False
) -> str | None:
    if value is None or not value.strip():
        return None  # unset (or empty): the embedded default
    parts = [value.strip()] if single else [p.strip() for p in value.split(",")]
    for part in parts:
        which = "" if single else f"{CREDENTIALS.sub('***@', part)!r}: "
        try:
            url = urlsplit(part)
            url.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as exc:
            raise ValueError(f"{which}not a URL ({exc}); expected {form}") from None
        if url.scheme not in schemes:
            raise ValueError(f"{which}not a URL of the form {form}")
        if url.scheme != "unix" and not url.hostname:
            raise ValueError(f"{which}no host; expected {form}")
    return value.strip()
