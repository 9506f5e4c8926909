"""Sharded boards against the real servers: the shard and bucket functions agree everywhere,
the histograms follow the entries, and accuracy=approx stays within its error bound.

The exact reads of sharded boards are checked by the oracle
(tests/integration/api/test_oracle.py, on 1, 3 and 16 shards), moderation, rebuild and season
tests run on sharded boards too.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from psycopg import AsyncConnection
from redis.asyncio import Redis
from redis.typing import EncodableT, FieldT

from rankd import codec
from rankd.histogram import bucket, floor_of
from rankd.periods import ALL_TIME, PeriodRef
from rankd.runtime import Runtime
from rankd.services.approx import Histograms
from rankd.stores.redis import keys
from rankd.stores.redis.scripts import HIST_REBUILD, Script, _read
from rankd.stores.standings import shard_sql
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id, zscored
from tests.support.durable import wait_consumer_idle

ODD_IDS = ["a", "Z", "player-1", "ünï-çødé", "x" * 64, "日本語", "a b", "0", "~"]


async def test_shard_of_is_the_same_in_python_and_postgresql(pg: AsyncConnection[Any]) -> None:
    ids = ODD_IDS + [f"p{i}" for i in range(500)]
    for shards in (2, 3, 16, 1024):
        sql = f"SELECT {shard_sql('id')} FROM unnest(%(ids)s::text[]) AS t(id)"
        cur = await pg.execute(sql, {"ids": ids, "n": shards})
        assert [r[0] for r in await cur.fetchall()] == [keys.shard_of(i, shards) for i in ids]
    spread = Counter(keys.shard_of(f"p{i}", 16) for i in range(16_000))
    assert min(spread.values()) > 800  # about 1,000 each: the hash spreads


async def test_histogram_buckets_are_the_same_in_python_and_lua(redis: Redis) -> None:
    probe = Script("probe", _read("lib") + "\nreturn hist_bucket(tonumber(ARGV[1]))", "")
    rng = random.Random(5)
    values = [0, 1, 255, 256, 511, 512, 513, 2**52, 2**53 - 1]
    values += [rng.randrange(1 << rng.randrange(1, 54)) for _ in range(300)]
    for value in values:
        assert await redis.eval(probe.source, 0, value) == bucket(value), value
        assert floor_of(bucket(value)) <= value < floor_of(bucket(value) + 1)


async def make_sharded(client: httpx.AsyncClient, shards: int, **config: Any) -> str:
    board_id = new_board_id("sharded")
    body = {"windows": [ALL_TIME], "shards": shards, **config}
    response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    return board_id


async def histograms(redis: Redis, board_id: str, shards: int) -> list[dict[int, int]]:
    """Each shard's histogram as Redis holds it, and as its entries say it should be."""
    held, counted = [], []
    for pk in keys.shard_keys(board_id, ALL_TIME, ALL_TIME, "", shards):
        raw = await redis.hgetall(pk.hist)
        held.append({int(k): int(v) for k, v in raw.items() if k != b"#" and int(v)})
        scores = zscored(await redis.zrange(pk.public, 0, -1, withscores=True))
        counted.append(dict(Counter(bucket(int(s)) for _, s in scores)))
    return [*held, *counted]


async def test_histograms_follow_submits_bans_holds_and_a_rebuild(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime
) -> None:
    shards = 5
    board_id = await make_sharded(client, shards, hold_top=2)
    rng = random.Random(11)
    runs = [
        {"run_id": f"r{i}", "player_id": f"h{rng.randrange(80)}", "score": rng.randrange(5000)}
        for i in range(600)
    ]
    response = await client.post(
        f"/v1/boards/{board_id}/runs:batch", json={"runs": runs}, headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    both = await histograms(redis, board_id, shards)
    assert both[:shards] == both[shards:]
    for player in ("h1", "h2", "h3"):  # banned: out of the public counts, then back
        response = await client.post(f"/v1/players/{player}/ban", headers=ADMIN_H)
        assert response.status_code == 200
    both = await histograms(redis, board_id, shards)
    assert both[:shards] == both[shards:]
    for player in ("h1", "h2", "h3"):
        response = await client.delete(f"/v1/players/{player}/ban", headers=ADMIN_H)
        assert response.status_code == 200
    await wait_consumer_idle(client, runtime)
    for pk in keys.shard_keys(board_id, ALL_TIME, ALL_TIME, "", shards):
        await redis.delete(pk.public, pk.hist)
    await runtime.rebuilder.rebuild(board=board_id)
    rebuilt = await histograms(redis, board_id, shards)
    assert rebuilt[:shards] == rebuilt[shards:] == both[:shards]


async def test_drifted_histograms_are_recounted_repaired_and_counted(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime
) -> None:
    shards = 4
    board_id = await make_sharded(client, shards)
    runs = [
        {"run_id": f"d{i}", "player_id": f"d{i % 90}", "score": (i * 7919) % 4000}
        for i in range(400)
    ]
    response = await client.post(
        f"/v1/boards/{board_id}/runs:batch", json={"runs": runs}, headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    before = await histograms(redis, board_id, shards)
    hist = Histograms(runtime.redis.histograms)
    ref = PeriodRef(board_id, ALL_TIME, ALL_TIME, "")
    assert await hist.reconcile(ref, shards) == 0  # the scripts kept them true
    # a write path that forgot to count: a bucket off by 3, one that should not be there,
    # one missing (5 + 2 + its count)
    [first, second, *_] = keys.shard_keys(board_id, ALL_TIME, ALL_TIME, "", shards)
    some = next(iter(before[0]))
    await redis.hincrby(first.hist, str(some), 3)
    await redis.hset(first.hist, "99999", 2)
    gone, missing = next(iter(before[1].items()))
    await redis.hdel(second.hist, str(gone))
    changes = [await redis.hget(pk.hist, "#") for pk in (first, second)]
    drift_metric = REGISTRY.get_sample_value("rankd_histogram_drift_total") or 0.0
    assert await hist.reconcile(ref, shards) == 3 + 2 + missing
    after = await histograms(redis, board_id, shards)
    assert after[:shards] == after[shards:] == before[:shards]
    assert [await redis.hget(pk.hist, "#") for pk in (first, second)] == changes  # kept
    assert REGISTRY.get_sample_value("rankd_histogram_drift_total") == drift_metric + 5 + missing
    assert await hist.reconcile(ref, shards) == 0


async def test_approx_is_exact_where_it_cannot_estimate(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=[ALL_TIME])
    body = {"run_id": "r1", "player_id": "solo", "score": 5}
    response = await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200
    exact = (await client.get(f"/v1/boards/{board_id}/players/solo")).json()
    approx = await client.get(f"/v1/boards/{board_id}/players/solo?accuracy=approx")
    assert approx.status_code == 200, approx.text
    assert approx.json() == {**exact, "approximate": False, "error_bound": 0}
    wrong = await client.get(f"/v1/boards/{board_id}/players/solo?accuracy=rough")
    assert wrong.status_code == 400, wrong.text


async def load_members(
    redis: Redis, board_id: str, shards: int, rows: list[tuple[str, int, int, str]]
) -> None:
    """(player, composite, exact ms, member) rows straight into their shards, as a rebuild
    loads them (bulk ZADD, the exact-times hashes), then each shard's histogram counted by
    hist_rebuild.lua. tests above check the submit scripts keep the same histograms."""
    per_shard: dict[int, list[tuple[str, int, int, str]]] = {}
    for row in rows:
        per_shard.setdefault(keys.shard_of(row[0], shards), []).append(row)
    for shard, mine in per_shard.items():
        pk = keys.period_keys(board_id, ALL_TIME, ALL_TIME, "", shard)
        pipe = redis.pipeline(transaction=False)
        times: dict[str, dict[FieldT, EncodableT]] = {}
        for i in range(0, len(mine), 5000):
            pipe.zadd(
                pk.public, {member: composite for _, composite, _, member in mine[i : i + 5000]}
            )
        for player, _, achieved, _ in mine:
            times.setdefault(keys.times(pk.public, player), {})[player] = achieved
        for key, fields in times.items():
            pipe.hset(key, mapping=fields)
        await pipe.execute()
        await redis.eval(HIST_REBUILD.source, 2, pk.public, pk.hist)


async def approx_sample(
    client: httpx.AsyncClient, board_id: str, sample: list[str], exact: dict[str, int]
) -> list[float]:
    """The bound relative to the exact rank of each sampled player; fails on any miss."""
    relative = []
    for player in sample:
        response = await client.get(f"/v1/boards/{board_id}/players/{player}?accuracy=approx")
        assert response.status_code == 200, response.text
        got = response.json()
        assert got["approximate"] is True
        assert abs(got["rank"] - exact[player]) <= got["error_bound"], (player, got)
        relative.append(got["error_bound"] / exact[player])
    return relative


async def test_approx_rank_respects_its_bound_on_a_small_board(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime
) -> None:
    await approx_board(client, redis, runtime, members=30_000, shards=7, sample=300)


@pytest.mark.slow
async def test_approx_rank_respects_its_bound_on_a_million_members(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime
) -> None:
    await approx_board(client, redis, runtime, members=1_000_000, shards=16, sample=1000)


async def approx_board(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime, *, members: int, shards: int,
    sample: int,
) -> None:  # fmt: skip
    board_id = await make_sharded(client, shards)
    board = await runtime.boards.get(board_id)
    pack = board.codecs[ALL_TIME].pack
    rng = random.Random(members)
    started = time.perf_counter()
    rows = []
    for i in range(members):
        # a skewed game: most scores low, a long tail, many exact ties at popular values
        score = rng.choice((100, 1000, 5000)) if i % 10 == 0 else int(rng.paretovariate(1.2) * 50)
        score = min(score, board.max_score)
        achieved = codec.STAMP_EPOCH_MS + rng.randrange(10**11)
        player = f"m{i}"
        rows.append(
            (player, pack(score, rng.randrange(10**9)), achieved, codec.member(player, achieved))
        )
    await load_members(redis, board_id, shards, rows)
    # the board's order: composite, then member bytes (ASCII ids here: str order is byte order)
    order = sorted(rows, key=lambda r: (r[1], r[3]), reverse=True)
    exact = {row[0]: rank for rank, row in enumerate(order, 1)}
    loaded = time.perf_counter() - started
    picked = [f"m{i}" for i in rng.sample(range(members), sample)]
    # the exact reads agree with the sorted rows
    for player in picked[:50]:
        got = (await client.get(f"/v1/boards/{board_id}/players/{player}")).json()
        assert (got["rank"], got["total"]) == (exact[player], members)
    relative = await approx_sample(client, board_id, picked, exact)
    relative.sort()
    print(
        f"{members} members on {shards} shards loaded in {loaded:.1f}s; error_bound / rank"
        f" over {sample} players: median {statistics.median(relative):.4%},"
        f" p99 {relative[int(0.99 * len(relative))]:.4%}, max {relative[-1]:.4%}"
    )
