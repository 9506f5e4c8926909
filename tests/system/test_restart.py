"""How far the log is applied, recorded in Redis (log_position.lua), against real restarts.

A position survives a kill -9 in the AOF; a position write reaching a Redis process that
is not the verified one (it restarted since) is refused in the same script call, so it
never claims runs that process lost; a wiped Redis has no position at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rankd.embedded.redis_server import RedisServer
from rankd.stores.redis.stores import RedisStores
from tests.system.test_failures import wipe


@pytest.fixture
async def node(server_dir: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(server_dir)
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)


async def _store(server: RedisServer) -> RedisStores:
    store = RedisStores(server.url)
    await store.open()
    return store


async def test_a_position_write_against_a_restarted_redis_is_refused(node: RedisServer) -> None:
    store = await _store(node)
    try:
        assert await store.positions.record_position(5, 1000) == [-1], (
            "nothing verified yet: refused"
        )
        first = await store.positions.server_run_id()
        await store.positions.mark_verified(first)
        assert await store.positions.record_position(5, 1000) == [1]
        assert await store.positions.record_position(4, 1001) == [0], "never moves back"
        # appendfsync everysec: written by now (a write behind a slow fsync waits up to 2 s)
        await asyncio.sleep(3.0)
    finally:
        await store.close()

    await asyncio.to_thread(node.kill)
    await asyncio.to_thread(node.start)  # from its AOF
    store = await _store(node)
    try:
        assert await store.positions.read_positions() == [(5, 1000)], "the AOF kept the position"
        second = await store.positions.server_run_id()
        assert second != first
        # an instance that applied runs to the old process writes its ack floor: refused,
        # because this process may have lost them
        assert await store.positions.record_position(9, 2000) == [-1]
        assert await store.positions.read_positions() == [(5, 1000)]
        assert not await store.positions.is_verified()
        # once restored and verified, positions move on
        await store.positions.mark_verified(second)
        assert await store.positions.record_position(9, 2000) == [1]
        assert await store.positions.read_positions() == [(9, 2000)]
    finally:
        await store.close()


async def test_a_wiped_redis_has_no_position(node: RedisServer) -> None:
    store = await _store(node)
    try:
        await store.positions.mark_verified(await store.positions.server_run_id())
        assert await store.positions.record_position(7, int(time.time() * 1000)) == [1]
    finally:
        await store.close()
    await asyncio.to_thread(node.kill)
    wipe(node.directory, keep=("redis.log",))
    await asyncio.to_thread(node.start)
    store = await _store(node)
    try:
        assert await store.positions.read_positions() == [None]
        assert await store.positions.record_position(8, 1) == [-1], "no verified marker: refused"
    finally:
        await store.close()
