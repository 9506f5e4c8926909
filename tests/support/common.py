"""What every test against the servers shares: the keys, the session's server URLs, the
settings an app is built with, and fresh board ids.

The fixtures that start the servers and the session app are in tests/conftest.py.
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass

from rankd.settings import Settings

# The embedded shape the session's servers take: single (default), cluster or sentinel
# (tests/system/test_topologies.py runs a selection of the suites on each).
TOPOLOGY = os.environ.get("RANKD_TEST_TOPOLOGY", "single")

ADMIN = "test-admin-key"
SERVER = "test-server-key"
ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}
SERVER_H = {"Authorization": f"Bearer {SERVER}"}


@dataclass(frozen=True)
class Urls:
    redis: str
    postgres: str
    nats: str


def make_settings(urls: Urls, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "redis_url": urls.redis,
        "postgres_url": urls.postgres,
        "nats_url": urls.nats,
        "admin_keys": [ADMIN],
        "server_keys": [SERVER],
        "top_cache_s": 0.0,  # tests read their own writes at once; test_reads_cache covers it
        # the season job runs only where a test runs it (with its own clock); test_seasons
        # covers the background job
        "season_job_interval_s": 0.0,
        # and reads see its work at once; test_seasons covers the archive state cache
        "archive_state_cache_s": 0.0,
        "stream_replicas": 1 if TOPOLOGY == "single" else 3,
    }
    return Settings(**(values | overrides))  # type: ignore[arg-type]


_counter = itertools.count()


def new_board_id(prefix: str = "b") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}-{next(_counter)}"
