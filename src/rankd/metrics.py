"""Prometheus metrics, exposed at /metrics.

With ``rankd serve --workers N`` every worker counts into files of its own in one shared
folder (prometheus-client's multiprocess mode, set up by ``shared_folder``) and a scrape,
whichever worker takes it, sums them all: one scrape shows the whole service. Each gauge says
how its workers' values combine (``multiprocess_mode``; ignored with one process). The folder
holds a few small files per worker process ever started, and goes when the service stops.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST


@contextlib.contextmanager
def shared_folder() -> Iterator[str]:
    """A new folder the worker processes started inside this block count into.

    Only processes started after it is set take it (prometheus-client picks its value class
    at import): uvicorn's workers are spawned, so each imports this module anew."""
    folder = tempfile.mkdtemp(prefix="rankd-metrics-")
    previous = os.environ.get(MULTIPROC_ENV)
    os.environ[MULTIPROC_ENV] = folder
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous
        shutil.rmtree(folder, ignore_errors=True)


def worker_gone(pid: int) -> None:
    """Drop a dead worker's live gauges; its counters stay in the sums, as counters must."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def exposition() -> bytes:
    """The text a scrape gets: this process's metrics, or every worker's summed."""
    if not os.environ.get(MULTIPROC_ENV):
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


REQUESTS = Histogram(
    "rankd_request_seconds",
    "HTTP request latency in seconds, by method, route template and status class.",
    ["method", "route", "status"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
)
RUNS_ACCEPTED = Counter(
    "rankd_runs_accepted_total",
    "Runs this process answered 2xx for (in the log), by endpoint: every resend of a run_id "
    "counts again, and so do runs that changed no entry (not improved, or a closed period).",
    ["endpoint"],
)
RUNS_APPLIED = Counter(
    "rankd_runs_applied_total",
    "Runs this process's log consumer (or rankd replay) applied to PostgreSQL (and to Redis "
    "where the submit path had not), counted again on each redelivery or replay, whether "
    "or not they changed an entry.",
)
REDIS_MEMORY_USED = Gauge(
    "rankd_redis_memory_used_ratio",
    "Redis used_memory over its maxmemory (0 when Redis has no limit); writes fail at 1.",
    multiprocess_mode="livemostrecent",
)
RUN_CONFLICTS = Counter(
    "rankd_run_conflicts_total",
    "Runs refused with run_conflict: their run_id was sent before with other content.",
)
CONFLICTS_SKIPPED = Counter(
    "rankd_consumer_conflicts_skipped_total",
    "Logged runs the log consumer applied nowhere because their run_id was recorded with "
    "other content (only after Redis lost claims it had made; see services/run_ids.py).",
)
TARGETS_ALREADY_APPLIED = Counter(
    "rankd_consumer_targets_already_applied_total",
    "Standings (run, window, segment) the log consumer left alone in Redis because the "
    "submit path had marked them applied.",
)
RESHARD_WRITES_SKIPPED = Counter(
    "rankd_reshard_writes_skipped_total",
    "Writes a resharding's other layout did not take because the period was being built "
    "there (services/resharding.py builds it from PostgreSQL before the switch).",
)
RESHARD_MOVED = Counter(
    "rankd_reshard_entries_moved_total",
    "Entries built into a resharding's new layout (services/resharding.py).",
)
MESSAGES_PARKED = Counter(
    "rankd_log_messages_parked_total",
    "Log messages this process parked in PostgreSQL because they failed to apply on their own.",
)
PARKED = Gauge(
    "rankd_parked_messages",
    "Log messages parked in PostgreSQL (by any instance), waiting for `rankd replay --parked`.",
    multiprocess_mode="livemostrecent",
)
CONSUMER_PENDING = Gauge(
    "rankd_consumer_pending_messages",
    "Log messages not yet delivered to the consumer.",
    multiprocess_mode="livemostrecent",
)
CONSUMER_ACK_PENDING = Gauge(
    "rankd_consumer_ack_pending_messages",
    "Log messages delivered but not yet acknowledged.",
    multiprocess_mode="livemostrecent",
)
CONSUMER_OLDEST_UNACKED = Gauge(
    "rankd_consumer_oldest_unacked_seconds",
    "Age of the oldest log message not yet applied.",
    multiprocess_mode="livemostrecent",
)
MESSAGES_DEFERRED = Counter(
    "rankd_log_messages_deferred_total",
    "Log messages left unacknowledged because a board period refused writes for now (a "
    "rebuild holds it); the log delivers them again after its backoff.",
)
LOG_PURGED = Counter(
    "rankd_log_messages_purged_total",
    "Log messages this process trimmed from the run log (RANKD_LOG_RETENTION), all of them "
    "applied to PostgreSQL first.",
)
DEPENDENCY_UP = Gauge(
    "rankd_dependency_up",
    "1 while the health watch reaches a dependency (redis, postgres, nats), else 0.",
    ["dependency"],
    multiprocess_mode="livemostrecent",
)
EMBEDDED_GAVE_UP = Gauge(
    "rankd_embedded_gave_up",
    "1 while the supervisor has given up restarting an embedded server (redis, postgres, "
    "nats): it stays down until rankd serve is restarted; else 0.",
    ["server"],
    multiprocess_mode="livemostrecent",
)
EMBEDDED_RESTARTS = Gauge(
    "rankd_embedded_restarts",
    "Restarts of an embedded server by the supervisor since rankd serve started.",
    ["server"],
    multiprocess_mode="livemostrecent",
)
RECOVERING = Gauge(
    "rankd_recovering",
    "What this instance is recovering from (a restarted Redis, a dependency back, the log's "
    "tail at start): /readyz is 503 while it is above 0.",
    multiprocess_mode="livemostrecent",
)
WEBHOOK_ATTEMPTS = Counter(
    "rankd_webhook_attempts_total",
    "Webhook delivery attempts by outcome: delivered (a 2xx), failed (retried later),"
    " gave_up (no 2xx for three days).",
    ["outcome"],
)
for _outcome in ("delivered", "failed", "gave_up"):  # exported at 0 from the start
    WEBHOOK_ATTEMPTS.labels(_outcome)
REBUILDS = Counter(
    "rankd_rebuilds_total",
    "Board periods (one window, period and segment each) this process loaded into Redis from "
    "PostgreSQL, in automatic and requested rebuilds.",
)
SEASON_PERIODS_FROZEN = Counter(
    "rankd_season_periods_frozen_total",
    "Closed periods this process froze into the archive.",
)
SEASON_ENTRIES_ARCHIVED = Counter(
    "rankd_season_entries_archived_total",
    "Entries this process wrote into the archive by freezing periods.",
)
SEASON_PERIODS_ARCHIVED = Counter(
    "rankd_season_periods_archived_total",
    "Frozen periods past their retention that this process marked archived and removed from Redis.",
)
HISTOGRAM_DRIFT = Counter(
    "rankd_histogram_drift_total",
    "Entries a sharded board's score histograms had miscounted, found and repaired by the"
    " periodic recount (services/approx.py); should stay 0.",
)
SEASON_LAST_PASS = Gauge(
    "rankd_season_last_pass_timestamp_seconds",
    "When this instance last completed a season job pass (unix time).",
    multiprocess_mode="max",
)
RATE_LIMITED = Counter(
    "rankd_rate_limited_total",
    "Requests refused with 429 rate_limited, by what was over its rate: key or address.",
    ["limit"],
)
RATE_UNCHECKED = Counter(
    "rankd_rate_limit_unchecked_total",
    "Requests let through without a rate check because Redis could not be asked.",
)
LIVE_STREAMS = Gauge(
    "rankd_live_streams", "Live event streams this process serves.", multiprocess_mode="livesum"
)
PLAYER_STREAMS = Gauge(
    "rankd_player_streams",
    "Player event streams (GET /v1/players/{id}/events) this process serves.",
    multiprocess_mode="livesum",
)
LIVE_EVENTS = Counter("rankd_live_events_total", "Top-list events sent to live streams.")
LIVE_NOTICES = Counter("rankd_live_notices_total", "Change notices received from Redis.")
LIVE_DROPPED = Counter(
    "rankd_live_dropped_total", "Live streams dropped because the client did not keep up."
)
LIVE_REFUSED_ADDRESS = Counter(
    "rankd_live_refused_address_total",
    "Live streams refused (429) because their client address held its maximum.",
)
CONNECTIONS_REFUSED = Counter(
    "rankd_connections_refused_total",
    "Connections refused: their address held its maximum (address), or the process and "
    "its probe reserve were full (process).",
    ["limit"],
)
