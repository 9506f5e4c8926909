"""Configuration, read once from the environment (prefix ``RANKD_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    publish_timeout_s: float = 5.0

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

    # How long board configs and player names are trusted from the in-process cache.
    config_cache_ttl_s: float = 2.0
    name_cache_ttl_s: float = 30.0
    # How long a rendered top list is reused by this process (0 turns it off).
    top_cache_s: float = 0.2

    # How often each instance checks that Redis is still the process the boards were
    # verified on (a restart triggers a rebuild from PostgreSQL).
    redis_watch_interval_s: float = 1.0

    # Runs may end at most this far in the future (clock skew between game servers and us).
    max_future_skew_s: int = 300

    @field_validator("admin_keys", "server_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value
