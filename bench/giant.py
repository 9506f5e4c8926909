"""Giant boards: one all-time period of N players, unsharded and sharded, in the same run.

For each ``--shards`` value a board holds the same N members (random scores and times,
valid composites, generated inside PostgreSQL once and copied per board). Then, one board
at a time on an emptied Redis (``--topology single``, or ``cluster``: three primaries
with a replica each):

* the rebuild from PostgreSQL (``rankd rebuild``'s code path; a sharded board a shard at
  a time), members/s, and Redis bytes per member (used_memory before and after, so the
  exact-times hashes and, sharded, the histograms are counted);
* reads through the store, as the service calls it (in process, no HTTP): exact rank
  (the player's entry and its rank: on a sharded board one more pipeline over the
  shards), approximate rank (the player's shard plus the histograms held in memory),
  top-100 and around (range 5), p50 and p99 over ``--reads`` random players each;
* submit throughput: the submit path's store call (one run per call, its script call and,
  sharded, the rank over every shard), ``--submits`` of them from 32 concurrent writers.

Prints a line per board and writes bench/results/giant.json.

    python -m bench.giant --members 5000000 --shards 1 4 16      # in `make bench`
    python -m bench.giant --members 50000000 --shards 1 16       # `make bench-giant`
    python -m bench.giant --members 20000000 --shards 16 --topology cluster
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from typing import Any

import psycopg

from bench.common import machine_line, topology_settings, write_result
from bench.rebuild_rate_streams import emptied, primaries_used
from rankd.periods import ALL_TIME, PeriodRef
from rankd.plan import plan
from rankd.runs import Run
from rankd.runtime import Runtime
from rankd.services.approx import Histograms
from rankd.settings import Settings

COLUMNS = "board_id, win, period, segment, player_id, composite, score, achieved_ms, run_id,"
COLUMNS += " time_bucket"
TARGET_BYTES_PER_MEMBER = 150
TARGET_MEMBERS_PER_S = 500_000


def board_of(shards: int) -> str:
    return f"bench-giant-{shards}"


def fill(pg_url: str, n: int, shards: list[int]) -> None:
    """N members of one all-time period for every board (the default codec: 23 time bits).

    A bulk load: player_best's indexes are dropped, every board's rows written, and the
    indexes built again once (sorting 100M rows once is far cheaper than 100M index
    inserts: 50M members took 40+ minutes a board with the indexes in place). The index
    definitions are read from the catalog, so they stay the migrations' own.
    """
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # a bench server of its own: fewer checkpoints during the load, room to sort
        conn.execute("ALTER SYSTEM SET max_wal_size = '16GB'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute("DELETE FROM player_best WHERE board_id LIKE 'bench-giant-%%'")
        constraints = conn.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = 'player_best'::regclass AND contype IN ('p', 'u')"
        ).fetchall()
        for name, _ in constraints:
            conn.execute(f'ALTER TABLE player_best DROP CONSTRAINT "{name}"')
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'player_best'"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        started = time.perf_counter()
        first = board_of(shards[0])
        conn.execute(
            f"INSERT INTO player_best ({COLUMNS})"
            " SELECT %s, 'all-time', 'all-time', '', 'p' || i, (s::bigint << 23) | t, s,"
            "  1793730127123 + i, 'r' || i, rankd_time_bucket('p' || i)"
            " FROM (SELECT i, (random() * 1e9)::bigint AS s, (random() * 8388607)::bigint AS t"
            "       FROM generate_series(1, %s) AS i) g",
            (first, n),
        )
        rest = COLUMNS.split(", ", 1)[1]
        for k in shards[1:]:
            conn.execute(
                f"INSERT INTO player_best ({COLUMNS}) SELECT %s, {rest}"
                " FROM player_best WHERE board_id = %s",
                (board_of(k), first),
            )
        for k in shards:
            conn.execute(
                "INSERT INTO periods_seen (board_id, win, period, segment, start_ms)"
                " VALUES (%s, 'all-time', 'all-time', '', 0) ON CONFLICT DO NOTHING",
                (board_of(k),),
            )
        print(f"rows written in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
        for name, definition in constraints:
            conn.execute(f'ALTER TABLE player_best ADD CONSTRAINT "{name}" {definition}')
        for _, definition in indexes:
            conn.execute(definition)
        print(f"indexed at {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
        conn.execute("VACUUM ANALYZE player_best")


def pcts(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 3),
    }


async def timed(calls: list[Any]) -> list[float]:
    out = []
    for call in calls:
        started = time.perf_counter()
        await call()
        out.append(time.perf_counter() - started)
    return out


async def measure(
    settings: Settings, n: int, shards: int, reads: int, submits: int
) -> dict[str, Any]:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    store = runtime.redis.reads
    board_id = board_of(shards)
    try:
        # every primary flushed and its lazy free done: a board freed in the background
        # and measured too early would count against this one
        empty = await emptied(runtime.redis.client)
        report = await runtime.rebuilder.rebuild(board=board_id)
        assert report is not None and report.members == n, report
        per_member = (await primaries_used(runtime.redis.client) - empty) / n
        board = await runtime.boards.get(board_id)
        ref = PeriodRef(board_id, ALL_TIME, ALL_TIME)
        rng = random.Random(shards)
        players = [f"p{rng.randrange(1, n + 1)}" for _ in range(reads)]

        def entry(p: str) -> Any:
            return lambda: store.entry(ref, p)

        def around(p: str) -> Any:
            return lambda: store.around(ref, p, 5)

        exact = await timed([entry(p) for p in players])
        top = await timed([lambda: store.top(ref, 0, 100) for _ in range(reads // 4)])
        near = await timed([around(p) for p in players])
        approx: dict[str, float] | None = None
        bounds: list[float] = []
        if shards > 1:
            hist = Histograms(runtime.redis.histograms)
            started = time.perf_counter()
            await hist.refresh(ref, shards)
            refresh_s = time.perf_counter() - started
            # the periodic recount (services/approx.py reconcile): every shard, atomic
            started = time.perf_counter()
            drift = await hist.reconcile(ref, shards)
            reconcile_s = time.perf_counter() - started

            async def estimate(p: str) -> None:
                shard, held, _ = await store.shard_entry(ref, p)
                assert held is not None
                ahead, bound, _ = await hist.estimate(ref, shards, shard, held[0])
                rank = held[1] + ahead + 1
                bounds.append(bound / rank)

            def one(p: str) -> Any:
                return lambda: estimate(p)

            approx = {
                **pcts(await timed([one(p) for p in players])),
                "refresh_s": refresh_s,
                "reconcile_s": round(reconcile_s, 3),
                "drift": drift,
            }
            bounds.sort()
        # submits: new runs of existing players, 32 writers, each its own store call
        now = int(time.time() * 1000)
        runs = [
            Run(f"s{i}", f"p{rng.randrange(1, n + 1)}", rng.randrange(10**9), now - 1000, now)
            for i in range(submits)
        ]
        queue = iter(runs)

        async def writer() -> None:
            for run in queue:
                await runtime.redis.writes.apply(board, [plan(board, run)], announce=True)

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(32)))
        submit_rate = submits / (time.perf_counter() - started)
    finally:
        await runtime.close()
    result: dict[str, Any] = {
        "members": n,
        "shards": shards,
        "rebuild_seconds": round(report.seconds, 2),
        "rebuild_members_per_s": round(n / report.seconds),
        "redis_bytes_per_member": round(per_member, 1),
        "exact_rank": pcts(exact),
        "top_100": pcts(top),
        "around_5": pcts(near),
        "approx_rank": approx,
        "approx_bound_over_rank": None
        if not bounds
        else {
            "median": round(statistics.median(bounds), 5),
            "p99": round(bounds[int(0.99 * (len(bounds) - 1))], 5),
        },
        "submits_per_s": round(submit_rate),
    }
    print(
        f"{n:,} members, {shards:>2} shards: rebuild {result['rebuild_members_per_s']:,}/s"
        f" ({report.seconds:.1f}s), {per_member:.0f} B/member, exact rank p50/p99"
        f" {result['exact_rank']['p50_ms']}/{result['exact_rank']['p99_ms']} ms, approx"
        f" {approx and (approx['p50_ms'], approx['p99_ms'])} ms, top-100 p99"
        f" {result['top_100']['p99_ms']} ms, around p99 {result['around_5']['p99_ms']} ms,"
        f" {result['submits_per_s']:,} submits/s"
        + (f", histograms recounted in {approx['reconcile_s']} s" if approx else ""),
        flush=True,
    )
    return result


async def prepare(settings: Settings, shards: list[int]) -> None:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        for k in shards:
            await runtime.boards.put(board_of(k), {"windows": ["all-time"], "shards": k})
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=5_000_000)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--submits", type=int, default=20_000)
    parser.add_argument(
        "--topology",
        choices=["single", "cluster"],
        default="single",
        help="cluster: three primaries and a replica each; memory summed over the primaries",
    )
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    results = []
    # room for the largest board (about 130 B a member) and its rebuild's staging keys
    gib = max(2, -(-args.members * 260 // 2**30))
    os.environ.setdefault("RANKD_REDIS_MAX_MEMORY", f"{gib}gb")
    with topology_settings(args.topology) as (postgres_url, settings):
        asyncio.run(prepare(settings, args.shards))
        started = time.perf_counter()
        fill(postgres_url, args.members, args.shards)
        print(f"filled in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
        for k in args.shards:
            results.append(
                asyncio.run(measure(settings, args.members, k, args.reads, args.submits))
            )
    write_result(
        "giant" if args.topology == "single" else f"giant_{args.topology}",
        {
            "command": " ".join(["python -m bench.giant", *sys.argv[1:]]),
            "results": results,
            "targets": {
                "redis_bytes_per_member": f"<= {TARGET_BYTES_PER_MEMBER}",
                "rebuild_members_per_s": f">= {TARGET_MEMBERS_PER_S}",
            },
            "topology": args.topology,
            "method": "reads and submits through the Redis store in process (no HTTP), one"
            " at a time for reads, 32 concurrent writers for submits",
        },
    )


if __name__ == "__main__":
    main()
