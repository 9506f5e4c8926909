"""What every test against the servers shares: the keys, the session's server URLs, the
settings an app is built with, fresh board ids, and the tests' reading of Redis replies.

The fixtures that start the servers and the session app are in tests/conftest.py.
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass
from typing import Protocol

from redis.typing import ZSetRangeResponse

from rankd.settings import Settings

# The embedded shape the session's servers take: single (default), cluster or sentinel
# (tests/system/test_topologies.py runs a selection of the suites on each).
TOPOLOGY = os.environ.get("RANKD_TEST_TOPOLOGY", "single")

ADMIN = "test-admin-key"
SERVER = "test-server-key"
ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}
SERVER_H = {"Authorization": f"Bearer {SERVER}"}
# player tokens: the session app signs with the first secret and accepts both (rotation)
TOKEN_SECRET = "test-player-token-secret-0123456789abcdef"
WEBHOOK_SECRET = "test-webhook-secret-0123456789abcdef"
TOKEN_SECRET_OLD = "test-player-token-secret-old-0123456789ab"


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
        "player_token_secret": [TOKEN_SECRET, TOKEN_SECRET_OLD],
        # webhooks are signed with it; sent only where a test sends them (test_webhooks.py)
        "webhook_secret": WEBHOOK_SECRET,
        "webhook_interval_s": 0.0,
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


class MakeBoard(Protocol):
    """The make_board fixtures: create a board with this config, return its id."""

    async def __call__(self, **config: object) -> str: ...


# redis-py types a sorted-set reply as every shape any client could get (str or bytes
# members, pairs as tuples or lists). The tests' client does not decode responses: members
# are bytes, and WITHSCORES pairs a member with its float score.


def zmembers(reply: ZSetRangeResponse) -> list[bytes]:
    """The members of a ZRANGE reply without scores."""
    found: list[bytes] = []
    for m in reply:
        assert isinstance(m, bytes), reply
        found.append(m)
    return found


def zscored(reply: ZSetRangeResponse) -> list[tuple[bytes, float]]:
    """The (member, score) pairs of a ZRANGE ... WITHSCORES reply."""
    found: list[tuple[bytes, float]] = []
    for pair in reply:
        assert isinstance(pair, tuple | list), reply
        m, s = pair
        assert isinstance(m, bytes) and isinstance(s, float), reply
        found.append((m, s))
    return found
