"""Concurrent callers' Redis calls share pipelines, and each gets exactly its own answers."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from rankd.stores.redis import keys
from rankd.stores.redis.batch import Batcher
from rankd.stores.redis.scripts import ENTRY, SUBMIT_BEST


def best(pk: keys.PeriodKeys, composite: int, member: str):  # type: ignore[no-untyped-def]
    args = (composite, member, 1000, "", 0, 0)
    return (SUBMIT_BEST, (pk.public, pk.public, pk.shadow, pk.applied), args)


async def test_each_caller_gets_its_own_results_from_shared_pipelines(redis: Redis) -> None:
    batcher = Batcher(redis, max_in_flight=2)
    pk = keys.period_keys(f"batch-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
    sent = []

    async def caller(i: int) -> None:
        [reply] = await batcher.run([best(pk, 1000 + i, f"m{i}")])
        sent.append((i, reply))

    await asyncio.gather(*(caller(i) for i in range(200)))
    assert len(sent) == 200
    for i, reply in sent:
        assert reply[0] == 1 and reply[2] == 1000 + i  # its own entry, raised by its call
    # and the reads see every write
    found = await asyncio.gather(
        *(batcher.call((ENTRY, (pk.public,), (f"m{i}",))) for i in range(200))
    )
    assert [int(f[0]) for f in found] == [200] * 200
    assert sorted(int(f[2]) for f in found) == list(range(200))  # ranks 0..199


async def test_one_callers_error_is_its_own(redis: Redis) -> None:
    batcher = Batcher(redis)
    key = f"batch-err-{uuid.uuid4().hex[:8]}"
    await redis.set(key, "not a set")

    async def good() -> list[object]:
        return await batcher.run([], [("ZADD", (f"{key}:ok", 1, "m"))])

    async def bad() -> list[object]:
        return await batcher.run([], [("ZADD", (key, 1, "m"))])  # WRONGTYPE

    results = await asyncio.gather(good(), bad(), good(), return_exceptions=True)
    assert results[0] == [1] or results[0] == [0]
    assert isinstance(results[1], ResponseError)
    assert not isinstance(results[2], BaseException)


async def test_lost_scripts_are_reloaded_and_the_pipeline_resent(redis: Redis) -> None:
    batcher = Batcher(redis)
    pk = keys.period_keys(f"batch-ns-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
    await redis.script_flush()
    [reply] = await batcher.run([best(pk, 5, "m")])
    assert reply[0] == 1


async def test_a_dead_connection_fails_every_waiter(urls) -> None:  # type: ignore[no-untyped-def]
    dead = Redis.from_url("redis://127.0.0.1:9/0", socket_connect_timeout=0.5)
    batcher = Batcher(dead)
    with pytest.raises(RedisConnectionError):
        await asyncio.gather(
            batcher.call((ENTRY, ("k",), ("m",))), batcher.call((ENTRY, ("k",), ("n",)))
        )
    await dead.aclose()
