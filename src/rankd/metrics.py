"""Prometheus metrics, exposed at /metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Histogram(
    "rankd_request_seconds",
    "HTTP request latency by route and status class.",
    ["method", "route", "status"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
)
RUNS_ACCEPTED = Counter("rankd_runs_accepted_total", "Runs made durable and applied.", ["endpoint"])
RUNS_APPLIED = Counter(
    "rankd_runs_applied_total", "Runs applied from the log to Redis and PostgreSQL."
)
MESSAGES_PARKED = Counter(
    "rankd_log_messages_parked_total", "Log messages that can never apply, parked."
)
PARKED = Gauge(
    "rankd_parked_messages",
    "Log messages parked in PostgreSQL (by any instance), waiting for `rankd replay --parked`.",
)
CONSUMER_PENDING = Gauge(
    "rankd_consumer_pending_messages", "Log messages not yet delivered to the consumer."
)
CONSUMER_ACK_PENDING = Gauge(
    "rankd_consumer_ack_pending_messages", "Log messages delivered but not yet acknowledged."
)
CONSUMER_OLDEST_UNACKED = Gauge(
    "rankd_consumer_oldest_unacked_seconds", "Age of the oldest log message not yet applied."
)
REBUILDS = Counter("rankd_rebuilds_total", "Board periods rebuilt into Redis from PostgreSQL.")
SEASON_PERIODS_FROZEN = Counter(
    "rankd_season_periods_frozen_total", "Closed periods frozen into the archive."
)
SEASON_ENTRIES_ARCHIVED = Counter(
    "rankd_season_entries_archived_total", "Entries written into the archive by freezes."
)
SEASON_PERIODS_ARCHIVED = Counter(
    "rankd_season_periods_archived_total", "Archived periods whose keys left Redis."
)
SEASON_LAST_PASS = Gauge(
    "rankd_season_last_pass_timestamp_seconds",
    "When this instance last completed a season job pass (unix time).",
)
LIVE_STREAMS = Gauge("rankd_live_streams", "Live event streams this process serves.")
LIVE_EVENTS = Counter("rankd_live_events_total", "Top-list events sent to live streams.")
LIVE_NOTICES = Counter("rankd_live_notices_total", "Change notices received from Redis.")
LIVE_DROPPED = Counter(
    "rankd_live_dropped_total", "Live streams dropped because the client did not keep up."
)
