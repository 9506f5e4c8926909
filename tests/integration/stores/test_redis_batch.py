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
from rankd.stores.redis.scripts import ENTRY, RUN_IDS, SUBMIT_BEST, Call


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


async def test_folded_calls_answer_as_single_calls_would(redis: Redis) -> None:
    """Concurrent submit_best calls on one period fold into one submit_best_many; each
    caller's reply is what its own call, sent in the same order, answers."""
    board = f"batch-fold-{uuid.uuid4().hex[:8]}"
    pk = keys.period_keys(board, "all-time", "all-time")
    single = keys.period_keys(board + "-single", "all-time", "all-time")
    scores = [(i * 7919) % 50 for i in range(60)]  # repeats: some calls change nothing
    batcher = Batcher(redis, max_in_flight=1)
    folded = await asyncio.gather(
        *(batcher.run([best(pk, s, f"m{i % 20}")]) for i, s in enumerate(scores))
    )
    alone = [await batcher.run([best(single, s, f"m{i % 20}")]) for i, s in enumerate(scores)]
    assert folded == alone
    assert await redis.zrange(pk.public, 0, -1, withscores=True) == await redis.zrange(
        single.public, 0, -1, withscores=True
    )


async def test_a_call_between_on_the_same_keys_keeps_the_order(redis: Redis) -> None:
    """A call on a folded group's keys ends the group: a later submit_best goes after it."""
    board = f"batch-order-{uuid.uuid4().hex[:8]}"
    pk = keys.period_keys(board, "all-time", "all-time")
    batcher = Batcher(redis, max_in_flight=1)
    first, read, last = await asyncio.gather(
        batcher.run([best(pk, 10, "a")]),
        batcher.call((ENTRY, (pk.public,), ("b",))),
        batcher.run([best(pk, 20, "b")]),
    )
    assert first[0][0] == 1 and last[0][0] == 1
    assert int(read[0]) == 1  # the read ran between the writes: one entry, not yet b's


async def test_run_id_claims_fold(redis: Redis) -> None:
    board = f"batch-ids-{uuid.uuid4().hex[:8]}"
    armed, bucket = keys.run_ids_armed(board), keys.run_ids(board, 1)
    await redis.set(armed, "1")
    batcher = Batcher(redis, max_in_flight=1)

    def claim(run_id: str, score: int) -> Call:
        return (RUN_IDS, (armed, bucket), (2_000_000_000, run_id, "p", str(score), "5", "1"))

    replies = await asyncio.gather(
        batcher.call(claim("r1", 1)),
        batcher.call(claim("r2", 2)),
        batcher.call(claim("r1", 3)),
        batcher.call(claim("r1", 1)),
    )
    assert replies == [[5], [5], [-1], [5]]  # the first send of r1 wins, its resend agrees
    await redis.delete(armed)
    assert await batcher.call(claim("r3", 1)) == -2
