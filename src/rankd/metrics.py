"""Prometheus metrics, exposed at /metrics."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REQUESTS = Histogram(
    "rankd_request_seconds",
    "HTTP request latency by route and status class.",
    ["method", "route", "status"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
)
RUNS_ACCEPTED = Counter("rankd_runs_accepted_total", "Runs made durable and applied.", ["endpoint"])
