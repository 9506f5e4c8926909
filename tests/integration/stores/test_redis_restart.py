"""A Redis killed and started again: the pooled connections to the old process are not
handed out again (each would fail one request after the service said it was ready)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from rankd.embedded import RedisServer
from rankd.stores.redis.connection import RedisConn

POOLED = 12  # idle connections left in the pool when Redis dies


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def fill_pool(conn: RedisConn) -> None:
    """POOLED connections, each held by a short blocking read, then idle in the pool."""
    await asyncio.gather(*(conn.client.blpop([f"nothing-{i}"], timeout=0.2) for i in range(POOLED)))


async def test_no_request_meets_a_connection_to_the_killed_redis(own_redis: RedisServer) -> None:
    conn = RedisConn(own_redis.url, max_connections=64)
    try:
        await conn.open()
        await fill_pool(conn)
        own_redis.kill()
        own_redis.start()  # the same port, a new process
        await asyncio.sleep(0.3)  # the old sockets' close has long reached the client
        await conn.open()  # the new process's scripts (as the restore loads them)
        # as many at once as were pooled: every old connection is taken, none may fail
        outcomes = await asyncio.gather(
            *(conn.client.blpop([f"again-{i}"], timeout=0.1) for i in range(POOLED)),
            *(conn.run([], [("SET", (f"k{i}", i))]) for i in range(POOLED)),
            return_exceptions=True,
        )
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert not failed, f"{len(failed)} of {len(outcomes)} failed, e.g. {failed[0]!r}"
    finally:
        await conn.close()
