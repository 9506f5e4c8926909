"""Exact achieved times: the three places that pick a member's exact-times hash agree (the
Lua scripts, Python for single reads, the SQL backfill), and a script keeps the time of the
run that holds the entry."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from rankd.stores.redis import keys
from rankd.stores.redis.scripts import SUBMIT_BEST, run_pipeline
from tests.support.common import Urls

IDS = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
    min_size=1,
    max_size=64,
)


@pytest.mark.parametrize("shard", [-1, 3], ids=["unsharded", "shard"])
async def test_python_lua_and_sql_pick_the_same_hash(
    redis: Redis, urls: Urls, migrated: Any, shard: int
) -> None:
    """A shard's hashes are folded (redis_keys.SHARD_TIME_BUCKETS): the same in both."""
    members = ["p", "48213377", "A" * 64, "kai_runs", "-", "zz9", *[f"m{i}" for i in range(50)]]
    pk = keys.period_keys(f"tb-{uuid.uuid4().hex[:8]}", "all-time", "all-time", "", shard)
    assert keys.time_buckets_of(pk.public) == (keys.SHARD_TIME_BUCKETS if shard >= 0 else 65521)
    calls = [
        (
            SUBMIT_BEST,
            (pk.public, pk.public, pk.shadow, pk.applied),
            (i + 1, m, 1_000 + i, "", 0, 0),
        )
        for i, m in enumerate(members)
    ]
    await run_pipeline(redis, calls)
    for i, member in enumerate(members):
        assert await redis.hget(keys.times(pk.public, member), member) == str(1_000 + i).encode()
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT m, rankd_time_bucket(m) FROM unnest(%s::text[]) AS m", (members,)
        )
        assert {m: b for m, b in await cur.fetchall()} == {m: keys.time_bucket(m) for m in members}
        # the rebuild's SQL folds a shard's buckets as keys.times does
        cur = await conn.execute(
            "SELECT m, (CASE WHEN %s = 0 THEN rankd_time_bucket(m)"
            " ELSE rankd_time_bucket(m) %% 4093 END) FROM unnest(%s::text[]) AS m",
            (0 if shard < 0 else 4, members),
        )
        for member, bucket in await cur.fetchall():
            assert keys.times(pk.public, member) == f"{pk.public}:at:{bucket}"


@settings(max_examples=200, deadline=None)
@given(IDS)
def test_buckets_are_in_range_and_depend_on_every_byte(member: str) -> None:
    bucket = keys.time_bucket(member)
    assert 0 <= bucket < keys.TIME_BUCKETS
    assert bucket == int.from_bytes(member.encode(), "big") % keys.TIME_BUCKETS


async def test_the_entry_keeps_the_time_of_the_run_that_holds_it(redis: Redis) -> None:
    pk = keys.period_keys(f"tt-{uuid.uuid4().hex[:8]}", "all-time", "all-time")

    async def send(composite: int, ended: int) -> list[int]:
        [reply] = await run_pipeline(
            redis,
            [
                (
                    SUBMIT_BEST,
                    (pk.public, pk.public, pk.shadow, pk.applied),
                    (composite, "p", ended, "", 0, 0),
                )
            ],
        )
        return list(reply)

    # then the entry before the call: rank (0: none), composite, time
    assert await send(10, 5_000) == [1, 1, 10, 1, 5_000, 0, 0, 0]
    assert await send(9, 6_000) == [0, 1, 10, 0, 5_000, 1, 10, 5_000]  # worse: the time stays
    # equal: the first holder stays
    assert await send(10, 7_000) == [0, 1, 10, 1, 5_000, 1, 10, 5_000]
    assert await send(11, 8_000) == [1, 1, 11, 1, 8_000, 1, 10, 5_000]
