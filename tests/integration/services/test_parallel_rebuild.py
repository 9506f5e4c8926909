"""The parallel rebuild (services/rebuild/parallel.py): a period cut into composite slices,
loaded by several streams at once, comes back exactly as the one-stream path restores it:
same entries, bans still in :shadow, a sum board's counted runs, the restoring flag until
the swap. Every period here is forced through it (no small-period batches, no size floor).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.periods import ALL_TIME
from rankd.runtime import Runtime
from rankd.services.rebuild import parallel as parallel_rebuild
from rankd.services.rebuild import rebuilder as rebuild_module
from rankd.services.rebuild import small
from rankd.stores.rebuild import slices as rebuild_slices
from rankd.stores.redis import staging as loads_module
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, zmembers
from tests.support.durable import (
    all_reads,
    delete_board_keys,
    every_shard,
    pg_composites,
    redis_runs,
    redis_state,
    staging_keys,
    submit,
    wait_consumer_idle,
)
from tests.support.wire import ago, iso

WINDOWS = ["all-time", "daily"]
PLAYERS = 120


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    """Each test on an unsharded board and on one split over 4 shards."""
    return make_sharded_board


@pytest.fixture
def slices(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every period through the parallel path, 3 streams; records each period's slices."""
    monkeypatch.setattr(small, "SMALL_PERIOD", -1)
    monkeypatch.setattr(rebuild_module, "PARALLEL_MIN", 0)
    monkeypatch.setattr(runtime.rebuilder, "streams", 3)
    monkeypatch.setattr(rebuild_slices, "SAMPLE_ROWS", 10**12)  # the whole table: no luck involved
    seen: list[int] = []
    real = rebuild_slices.composite_slices

    async def recorded(*args: Any) -> list[tuple[int, int]]:
        found = await real(*args)
        seen.append(len(found))
        return found

    monkeypatch.setattr(rebuild_slices, "composite_slices", recorded)
    return seen


async def fill(client: httpx.AsyncClient, board_id: str, players: int = PLAYERS) -> None:
    rng = random.Random(board_id)
    for i in range(players):
        # a few popular scores: ties across slice bounds and shards
        score = rng.choice([1000, 2000, rng.randrange(1, 10**6)])
        await submit(client, board_id, f"r{i}", f"p{i}", score, ago(minutes=rng.randrange(1, 600)))


async def test_a_parallel_rebuild_restores_every_entry_and_read(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    slices: list[int],
) -> None:
    board_id = await make_board(windows=WINDOWS)
    await fill(client, board_id)
    banned = "p7"
    response = await client.post(f"/v1/players/{banned}/ban", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    try:
        await wait_consumer_idle(client, runtime)
        reads = await all_reads(client, board_id, WINDOWS)
        raw = await redis_state(redis, board_id, WINDOWS)
        assert await delete_board_keys(redis, board_id, WINDOWS) > 0

        report = await runtime.rebuilder.rebuild(board=board_id)
        assert report is not None and report.skipped == []
        assert max(slices) == 3, slices  # the all-time period went in three slices
        assert await redis_state(redis, board_id, WINDOWS) == raw
        assert await all_reads(client, board_id, WINDOWS) == reads
        assert await staging_keys(redis, board_id) == []
        shadows = [await redis.zcard(pk.shadow) for pk in every_shard(board_id, ALL_TIME, ALL_TIME)]
        assert sum(shadows) == 1, "the banned player's entry is back in :shadow"
        top = await client.get(f"/v1/boards/{board_id}/top", params={"window": ALL_TIME})
        assert top.json()["total"] == PLAYERS - 1
    finally:
        await client.delete(f"/v1/players/{banned}/ban", headers=ADMIN_H)


async def test_a_parallel_rebuild_agrees_with_postgresql_on_a_sum_board(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    slices: list[int],
) -> None:
    board_id = await make_board(windows=WINDOWS, policy="sum")
    await fill(client, board_id, players=60)
    for i in range(30):  # second runs: sums, and two counted runs for those players
        await submit(client, board_id, f"again{i}", f"p{i}", 5 + i, ago(minutes=2))
    await wait_consumer_idle(client, runtime)
    counted = await redis_runs(redis, board_id, WINDOWS)
    await delete_board_keys(redis, board_id, WINDOWS)

    await runtime.rebuilder.rebuild(board=board_id)
    assert max(slices) > 1, slices
    assert await redis_runs(redis, board_id, WINDOWS) == counted
    assert await redis_state(redis, board_id, WINDOWS) == await pg_composites(pg, board_id)


async def test_a_submit_during_a_parallel_rebuild_leaves_one_entry(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    monkeypatch: pytest.MonkeyPatch,
    slices: list[int],
) -> None:
    """As test_rebuild's test_a_submit_between_the_times_load_and_the_swap_leaves_one_entry,
    on the parallel path: a submit after the exact times are written and before the swap
    is refused (503) or lands once; never a second member for the player."""
    board_id = await make_board(windows=[ALL_TIME])
    await fill(client, board_id, players=40)
    await wait_consumer_idle(client, runtime)
    answers: list[int] = []
    ended = ago(minutes=1)
    real_swap = loads_module.swap

    async def swap_after_a_submit(*args: Any, **kwargs: Any) -> None:
        if not answers:
            run = {"run_id": "late", "player_id": "p3", "score": 10**7, "ended_at": iso(ended)}
            answer = await client.post(f"/v1/boards/{board_id}/runs", json=run, headers=SERVER_H)
            answers.append(answer.status_code)
        await real_swap(*args, **kwargs)

    monkeypatch.setattr(loads_module, "swap", swap_after_a_submit)
    await runtime.rebuilder.rebuild(board=board_id, window=ALL_TIME)
    monkeypatch.setattr(loads_module, "swap", real_swap)
    assert answers and answers[0] in (200, 503)
    if answers[0] == 503:  # refused while restoring: the retry is idempotent
        await submit(client, board_id, "late", "p3", 10**7, ended)
    await wait_consumer_idle(client, runtime)

    members = []
    for pk in every_shard(board_id, ALL_TIME, ALL_TIME):
        members += [m.decode()[7:] for m in zmembers(await redis.zrange(pk.public, 0, -1))]
    assert sorted(members) == sorted(f"p{i}" for i in range(40)), "one entry per player"
    top = (await client.get(f"/v1/boards/{board_id}/top", params={"window": ALL_TIME})).json()
    assert top["entries"][0]["player_id"] == "p3" and top["total"] == 40
    assert await pg_composites(pg, board_id) == await redis_state(redis, board_id, [ALL_TIME])


@pytest.mark.parametrize(
    ("sample", "slices", "expected"),
    [
        ([], 4, 1),
        (list(range(100)), 4, 4),
        ([5] * 100, 4, 1),  # one composite: one slice (ties never split)
        (list(range(20)), 4, 2),  # 8 sampled values a slice at least
        ([-(2**63)] * 50 + list(range(50)), 4, 3),  # a cut at the lowest composite dropped
    ],
)
def test_the_slices_cover_every_composite_once(
    sample: list[int], slices: int, expected: int
) -> None:
    ranges = rebuild_slices.slice_bounds(sample, slices)
    assert len(ranges) == expected
    assert (
        ranges[0][0] == rebuild_slices.COMPOSITE_MIN
        and ranges[-1][1] == rebuild_slices.COMPOSITE_MAX
    )
    assert all(lo <= hi for lo, hi in ranges)
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    # the module it imports, not one it exports: looked up in the module's namespace
    assert vars(parallel_rebuild)["rebuild_slices"] is rebuild_slices
