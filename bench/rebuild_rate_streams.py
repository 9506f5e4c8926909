"""``python -m bench.rebuild_rate --streams`` (bench/rebuild_rate.py): RANKD_REBUILD_STREAMS
values compared in one run, A B B A, per board size and shard count, on one Redis or a
cluster; also the Redis memory helpers (``emptied``, ``primaries_used``) bench/giant.py
uses."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

import psycopg
from redis.asyncio import Redis

from bench.common import topology_settings, write_result
from bench.rebuild_rate_measure import BOARD, fill
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores.redis.connection import is_cluster

# --- streams compared: RANKD_REBUILD_STREAMS values side by side -----------------------------


def streams_board(shards: int) -> str:
    return f"{BOARD}-s{shards}"


def copy_board(pg_url: str, source: str, target: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM player_best WHERE board_id = %s", (target,))
        conn.execute(
            "INSERT INTO player_best (board_id, win, period, segment, player_id, composite,"
            " score, achieved_ms, run_id, time_bucket)"
            " SELECT %s, win, period, segment, player_id, composite, score, achieved_ms,"
            "  run_id, time_bucket FROM player_best WHERE board_id = %s",
            (target, source),
        )
        conn.execute(
            "INSERT INTO periods_seen VALUES (%s, 'all-time', 'all-time', 0)"
            " ON CONFLICT DO NOTHING",
            (target,),
        )
        conn.execute("VACUUM ANALYZE player_best")


async def emptied(redis: Redis) -> int:
    """Flush every primary, wait until the lazy free is done; the used memory then."""
    cluster = is_cluster(redis)
    where: dict[str, Any] = {"target_nodes": "primaries"} if cluster else {}
    await redis.flushall(asynchronous=True, **where)
    for _ in range(1200):
        infos = await redis.info("memory", **where)
        nodes = list(infos.values()) if cluster else [infos]
        if all(int(i.get("lazyfree_pending_objects", 0)) == 0 for i in nodes):
            return sum(int(i["used_memory"]) for i in nodes)
        await asyncio.sleep(0.1)
    raise AssertionError("Redis is still freeing the last board")


async def primaries_used(redis: Redis) -> int:
    """used_memory of the one Redis, or summed over a cluster's primaries (the replicas
    hold copies)."""
    cluster = is_cluster(redis)
    where: dict[str, Any] = {"target_nodes": "primaries"} if cluster else {}
    infos = await redis.info("memory", **where)
    return sum(int(i["used_memory"]) for i in (infos.values() if cluster else [infos]))


async def timed_rebuild(settings: Settings, board: str, n: int) -> dict[str, float]:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        empty = await emptied(runtime.redis.client)
        report = await runtime.rebuilder.rebuild(board=board)
        assert report is not None and report.members == n, report
        used = await primaries_used(runtime.redis.client)
    finally:
        await runtime.close()
    return {
        "seconds": round(report.seconds, 2),
        "members_per_s": round(n / report.seconds),
        "redis_bytes_per_member": round((used - empty) / n, 1),
    }


def main_streams(args: argparse.Namespace) -> None:
    order = [*args.streams, *reversed(args.streams)] * max(1, args.rounds)
    results = []
    loadavg = [[round(x, 2) for x in os.getloadavg()]]
    with topology_settings(args.topology) as (postgres_url, base):

        async def boards() -> None:
            runtime = Runtime.build(base)
            await runtime.open(background=False)
            try:
                for k in args.shards:
                    config = {"windows": ["all-time"], "shards": k}
                    await runtime.boards.put(streams_board(k), config)
            finally:
                await runtime.close()

        asyncio.run(boards())
        for n in args.sizes:
            started = time.perf_counter()
            first = streams_board(args.shards[0])
            fill(postgres_url, n, first)
            for k in args.shards[1:]:
                copy_board(postgres_url, first, streams_board(k))
            print(f"filled {n:,} rows in {time.perf_counter() - started:.1f}s", flush=True)
            for k in args.shards:
                runs: dict[int, list[dict[str, float]]] = {s: [] for s in args.streams}
                for streams in order:
                    settings = base.model_copy(update={"rebuild_streams": streams})
                    run = asyncio.run(timed_rebuild(settings, streams_board(k), n))
                    runs[streams].append(run)
                    print(
                        f"{n:>11,} members, {k:>2} shards, {streams} streams:"
                        f" {run['members_per_s']:>9,}/s ({run['seconds']}s),"
                        f" {run['redis_bytes_per_member']} B/member",
                        flush=True,
                    )
                for streams, done in runs.items():
                    rates = [r["members_per_s"] for r in done]
                    results.append(
                        {
                            "topology": args.topology,
                            "members": n,
                            "shards": k,
                            "streams": streams,
                            "mean_members_per_s": round(statistics.mean(rates)),
                            "runs": done,
                        }
                    )
                    print(
                        f"  {k} shards, {streams} streams: mean {statistics.mean(rates):,.0f}"
                        f" members/s over {len(rates)}",
                        flush=True,
                    )
            loadavg.append([round(x, 2) for x in os.getloadavg()])
    write_result(
        "rebuild_streams" if args.topology == "single" else f"rebuild_streams_{args.topology}",
        {
            "command": " ".join(["python -m bench.rebuild_rate", *sys.argv[1:]]),
            "order": order,
            "loadavg": loadavg,
            "results": results,
            "method": "rankd rebuild of one all-time period per board (board config shards"
            " as given), RANKD_REBUILD_STREAMS values alternated A B B A in one run",
        },
    )
