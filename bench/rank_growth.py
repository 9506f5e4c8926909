"""Rank cost as boards grow (measurement 3): Rankd beside the seeds' naive SQL design.

For each size (10k, 100k, 1M, 10M members; ``--quick``: 10k and 100k) the same board is
loaded twice, with the same players and scores:

* into Redis as one all-time period served by ``rankd serve`` (as in ``bench.reads``);
* into PostgreSQL as the naive design: ``scores(player_id text primary key, score bigint)``
  with an index on ``score``; a rank is ``SELECT COUNT(*)+1 FROM scores WHERE score > $1``.

Then, for a player near the top (rank 10), the median player and the bottom player:
Rankd's ``GET /v1/boards/{b}/players/{p}`` latency (sequential requests on one keep-alive
connection), the bare ``ZREVRANK`` from redis-py for reference, and the naive query's
latency (psycopg, prepared, sequential). Medians and p99s; the ratio of Rankd's latency at
the largest size to the smallest is the issue's target (within 1.5x).

    python -m bench.rank_growth
    python -m bench.rank_growth --quick
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import psycopg
from redis.asyncio import Redis

from bench.common import create_board, machine_line, servers, service, write_result
from bench.rawhttp import Connection
from bench.reads_data import check_board, load_board, multiplier, player_id, score_at
from bench.reads_load import run
from rankd.codec import member
from rankd.stores.redis import keys

POSITIONS = ("top", "median", "bottom")
REQUESTS, ROUNDS = 200, 4  # per player and size
NAIVE_MIN, NAIVE_MAX, NAIVE_BUDGET_S = 20, 50, 3.0


def ranks(n: int) -> dict[str, int]:
    return {"top": min(10, n), "median": (n + 1) // 2, "bottom": n}


def fill_naive(pg_url: str, n: int) -> float:
    """The naive table with the same players and scores as the Redis board; returns seconds."""
    started = time.perf_counter()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("DROP TABLE IF EXISTS scores")
        conn.execute("CREATE TABLE scores (player_id text NOT NULL, score bigint NOT NULL)")
        conn.execute(
            "INSERT INTO scores (player_id, score)"
            " SELECT 'p' || (((r - 1) * %(a)s) %% %(n)s + 1), (%(n)s - r + 1) * %(step)s"
            " FROM generate_series(1, %(n)s::bigint) AS r",
            {"a": multiplier(n), "n": n, "step": 1_000_000_000 // n},
        )
        conn.execute("ALTER TABLE scores ADD PRIMARY KEY (player_id)")
        conn.execute("CREATE INDEX scores_score ON scores (score)")
        conn.execute("VACUUM ANALYZE scores")  # visibility map: index-only COUNT(*)
    return time.perf_counter() - started


def timed(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 4),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 4),
        "count": len(ordered),
    }


async def sequential(call: Callable[[], Awaitable[bool]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        ok = await call()
        samples.append(time.perf_counter() - began)
        if not ok:
            raise RuntimeError("unexpected answer")
    return samples


async def measure_redis_side(
    port: int, redis_url: str, sizes: list[int]
) -> dict[int, dict[str, dict[str, dict[str, float]]]]:
    """Rankd over HTTP and the bare ZREVRANK for each size's three players, in ROUNDS rounds
    that visit every size in turn, so drift on a shared machine spreads over all sizes."""
    conn = await Connection.open("127.0.0.1", port)
    client = Redis.from_url(redis_url)
    calls: dict[tuple[int, str, str], Callable[[], Awaitable[bool]]] = {}
    for n in sizes:
        board = f"bench-rank-{n}"
        key = keys.period_keys(board, "all-time", "all-time").public
        for position, rank in ranks(n).items():
            pid = player_id(rank, n)
            path = f"/v1/boards/{board}/players/{pid}"

            async def http_rank(path: str = path, rank: int = rank) -> bool:
                status, body = await conn.request("GET", path)
                return status == 200 and orjson.loads(body)["rank"] == rank

            async def bare_rank(key: str = key, pid: str = pid, rank: int = rank) -> bool:
                return await client.zrevrank(key, member(pid, 0)) == rank - 1

            calls[(n, "rankd", position)] = http_rank
            calls[(n, "redis", position)] = bare_rank
    samples: dict[tuple[int, str, str], list[float]] = {k: [] for k in calls}
    try:
        for call in calls.values():  # warm-up: connections, the service's caches
            await sequential(call, 10)
        for _ in range(ROUNDS):
            for k, call in calls.items():
                samples[k] += await sequential(call, REQUESTS // ROUNDS)
    finally:
        await conn.close()
        await client.aclose()
    out: dict[int, dict[str, dict[str, dict[str, float]]]] = {}
    for (n, side, position), values in samples.items():
        out.setdefault(n, {}).setdefault(side, {})[position] = timed(values)
    return out


def measure_naive(pg_url: str, n: int) -> dict[str, dict[str, float]]:
    out = {}
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for position, rank in ranks(n).items():
            score = score_at(rank, n)
            query = "SELECT COUNT(*) + 1 FROM scores WHERE score > %s"
            row = conn.execute(query, (score,), prepare=True).fetchone()  # warm-up
            if row is None or row[0] != rank:
                raise RuntimeError(f"naive rank of rank {rank} came back as {row}")
            samples: list[float] = []
            deadline = time.perf_counter() + NAIVE_BUDGET_S
            while len(samples) < NAIVE_MIN or (
                len(samples) < NAIVE_MAX and time.perf_counter() < deadline
            ):
                began = time.perf_counter()
                conn.execute(query, (score,), prepare=True).fetchone()
                samples.append(time.perf_counter() - began)
            out[position] = timed(samples)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10k and 100k members only")
    parser.add_argument("--sizes", type=int, nargs="+", help="override the board sizes")
    args = parser.parse_args()
    sizes = sorted(
        args.sizes or ([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000, 10**7])
    )
    print(f"machine: {machine_line()}")
    per_size: dict[str, Any] = {}
    with servers() as stack, service(stack) as port, ThreadPoolExecutor(1) as pool:
        assert stack.redis is not None
        redis_port = stack.redis.port
        for n in sizes:
            board = f"bench-rank-{n}"
            create_board(port, board)
            key = keys.period_keys(board, "all-time", "all-time").public
            filling = pool.submit(fill_naive, stack.postgres_url, n)  # beside the Redis load
            load_s = load_board(redis_port, key, n)
            fill_s = filling.result()
            check_board(port, board, n)
            naive = measure_naive(stack.postgres_url, n)
            per_size[str(n)] = {
                "ranks": ranks(n),
                "redis_load_seconds": round(load_s, 2),
                "postgres_fill_seconds": round(fill_s, 2),
                "naive": naive,
            }
            print(
                f"{n:>11,} members: Redis load {load_s:.1f}s, PostgreSQL fill {fill_s:.1f}s,"
                " naive rank "
                + ", ".join(f"{pos} {naive[pos]['median_ms']:.3f} ms" for pos in POSITIONS),
                flush=True,
            )
        for n, measured in run(measure_redis_side(port, stack.redis_url, sizes)).items():
            per_size[str(n)].update(measured)
        with psycopg.connect(stack.postgres_url, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS scores")

    def series(side: str, stat: str) -> dict[str, list[float]]:
        return {pos: [per_size[str(n)][side][pos][stat] for n in sizes] for pos in POSITIONS}

    rankd_ms, naive_ms = series("rankd", "median_ms"), series("naive", "median_ms")
    growth = {
        side: {pos: round(values[pos][-1] / values[pos][0], 3) for pos in POSITIONS}
        for side, values in (("rankd", rankd_ms), ("naive", naive_ms))
    }
    print_table(sizes, rankd_ms, naive_ms, series("redis", "median_ms"))
    print(
        f"largest/smallest ({sizes[-1]:,} vs {sizes[0]:,}): rankd "
        + ", ".join(f"{pos} {growth['rankd'][pos]:.2f}x" for pos in POSITIONS)
        + " (target <= 1.5x); naive "
        + ", ".join(f"{pos} {growth['naive'][pos]:.1f}x" for pos in POSITIONS)
    )
    write_result(
        "rank_growth",
        {
            "sizes": sizes,
            "rankd_ms": rankd_ms,
            "naive_ms": naive_ms,
            "rankd_p99_ms": series("rankd", "p99_ms"),
            "naive_p99_ms": series("naive", "p99_ms"),
            "redis_zrevrank_ms": series("redis", "median_ms"),
            "growth_largest_over_smallest": growth,
            "rankd_target_ratio": 1.5,
            "per_size": per_size,
            "method": {
                "rankd": f"GET /v1/boards/{{b}}/players/{{p}}, {REQUESTS} sequential"
                " requests on one keep-alive connection",
                "redis_zrevrank": f"bare redis-py ZREVRANK, {REQUESTS} sequential",
                "naive": "SELECT COUNT(*) + 1 FROM scores WHERE score > $1 (psycopg, prepared,"
                f" {NAIVE_MIN}-{NAIVE_MAX} sequential queries), index on score, after VACUUM"
                " ANALYZE",
                "players": "rank 10 (top), the median rank, the last rank (bottom)",
                "quick": args.quick,
            },
        },
    )


def print_table(
    sizes: list[int],
    rankd_ms: dict[str, list[float]],
    naive_ms: dict[str, list[float]],
    redis_ms: dict[str, list[float]],
) -> None:
    print()
    head = "".join(f" {f'{side} {pos}':>15}" for side in ("rankd", "naive") for pos in POSITIONS)
    print(f"{'members':>11}{head} {'ZREVRANK med':>13}   (medians, ms)")
    for i, n in enumerate(sizes):
        cells = "".join(
            f" {values[pos][i]:>15.3f}" for values in (rankd_ms, naive_ms) for pos in POSITIONS
        )
        print(f"{n:>11,}{cells} {redis_ms['median'][i]:>13.3f}")


if __name__ == "__main__":
    main()
