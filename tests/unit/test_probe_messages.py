"""What `rankd serve` says of a service it cannot reach: one readable phrase per variable
(a refused loopback port: no server is needed)."""

from __future__ import annotations

import asyncio

from rankd.embedded import free_port
from rankd.stores.probe import unreachable


def test_an_unreachable_sentinel_group_is_said_plainly_not_as_an_object_repr() -> None:
    port = free_port()  # nothing listens there
    said = asyncio.run(
        unreachable(
            f"redis+sentinel://127.0.0.1:{port}/mymaster",
            f"postgresql://x@127.0.0.1:{port}/db",
            f"nats://127.0.0.1:{port}",
            timeout_s=2,
        )
    )
    assert [phrase.split(":", 1)[0] for phrase in said] == [
        "RANKD_REDIS_URL",
        "RANKD_POSTGRES_URL",
        "RANKD_NATS_URL",
    ]
    redis = said[0]
    assert "'mymaster'" in redis and "Sentinel" in redis
    assert "<" not in redis and "REDACTED" not in redis, redis
