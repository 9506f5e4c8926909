"""Rebuild rate: Redis boards restored from PostgreSQL, beside a raw bulk load of the same data.

For each size it fills ``player_best`` with one all-time period of N members (random scores
and times, valid composites), then in the same run:

* ``rankd rebuild``'s code path (COPY out in composite order, pipelined multi-member ZADD
  into a staging key, RENAME), timed end to end;
* the raw baseline: ``redis-cli --pipe`` fed the same entries, in the same order, as
  1000-member ZADD commands prepared in a file beforehand (the load alone is timed).

It prints members/s for both, the ratio, and Redis bytes per member, and writes
bench/results/rebuild.json.

    python -m bench.rebuild_rate --sizes 1000000 10000000

``--periods N [N ...]`` measures the other shape instead: N tiny periods (1-3 members each:
daily periods of a board with a segment dimension, days x segment values), restored whole
as after a Redis restart; it prints periods/s and members/s and writes
bench/results/rebuild_periods.json. A rebuild should cost per member, not per period.

    python -m bench.rebuild_rate --periods 20000

``--streams S [S ...]`` compares ``RANKD_REBUILD_STREAMS`` values in the same run instead:
for each size and each ``--shards`` value (a board of that many shards holding the same
members), rebuilds alternate between the values, A B B A (``--rounds`` of them), on the
``--topology`` given (``single``, or ``cluster``: three primaries and their replicas). It
prints members/s per rebuild and the mean per value, and writes
bench/results/rebuild_streams.json (``rebuild_streams_cluster.json`` on the cluster).

    python -m bench.rebuild_rate --sizes 2000000 --shards 1 16 --streams 1 4
    python -m bench.rebuild_rate --sizes 2000000 --shards 1 16 --streams 1 4 --topology cluster
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from redis.asyncio import Redis

from bench.common import machine_line, write_result
from rankd.embedded import find_redis_server, start_embedded
from rankd.embedded.topology import start_topology
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores.redis import keys
from rankd.stores.redis.connection import is_cluster

BOARD = "bench-rebuild"
CHUNK = 1000
TARGET_MEMBERS_PER_S = 500_000
TARGET_RATIO = 0.8
TARGET_BYTES_PER_MEMBER = 150  # including each entry's exact achieved time


def fill(pg_url: str, n: int, board: str = BOARD) -> None:
    """N members of one all-time period, generated inside PostgreSQL (default codec: 23
    time bits, so composite = score << 23 | reversed time units)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM player_best WHERE board_id = %s", (board,))
        conn.execute(
            "INSERT INTO player_best (board_id, win, period, player_id, composite, score,"
            " achieved_ms, run_id, time_bucket)"
            " SELECT %s, 'all-time', 'all-time', 'p' || i, (s::bigint << 23) | t, s,"
            "  1793730127123 + i, 'r' || i, rankd_time_bucket('p' || i)"
            " FROM (SELECT i, (random() * 1e9)::bigint AS s, (random() * 8388607)::bigint AS t"
            "       FROM generate_series(1, %s) AS i) g",
            (board, n),
        )
        conn.execute(
            "INSERT INTO periods_seen VALUES (%s, 'all-time', 'all-time', 0)"
            " ON CONFLICT DO NOTHING",
            (board,),
        )
        conn.execute("VACUUM ANALYZE player_best")


def write_pipe_file(pg_url: str, key: str, path: Path) -> None:
    """RESP-encoded multi-member ZADDs of the period, in composite order."""

    def bulk(value: bytes) -> bytes:
        return b"$%d\r\n%s\r\n" % (len(value), value)

    with psycopg.connect(pg_url) as conn, path.open("wb") as out:
        cur = conn.cursor()
        cur.execute(
            "SELECT player_id, composite FROM player_best WHERE board_id = %s ORDER BY composite",
            (BOARD,),
        )
        while rows := cur.fetchmany(CHUNK):
            parts = [b"*%d\r\n" % (2 + 2 * len(rows)), bulk(b"ZADD"), bulk(key.encode())]
            for player, composite in rows:
                parts.append(bulk(str(composite).encode()))
                parts.append(bulk(player.encode()))
            out.write(b"".join(parts))


async def used_memory(redis: Redis) -> int:
    info = await redis.info("memory")
    return int(info["used_memory"])


async def prepare(settings: Settings) -> None:
    """Migrations and the board config."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(BOARD, {"windows": ["all-time"]})
    finally:
        await runtime.close()


async def rankd_rebuild(settings: Settings, n: int) -> tuple[float, float]:
    """(seconds, Redis bytes per member) of the rebuild of the whole period."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.redis.client.flushall()
        empty = await used_memory(runtime.redis.client)
        report = await runtime.rebuilder.rebuild(board=BOARD)
        assert report is not None and report.members == n, report
        per_member = (await used_memory(runtime.redis.client) - empty) / n
        print(f"rebuilt {n:,} members in {report.seconds:.1f}s, {per_member:.1f} B/member")
        await runtime.redis.client.flushall(asynchronous=True)  # a large flush blocks seconds
    finally:
        await runtime.close()
    return report.seconds, per_member


def raw_load(settings: Settings, redis_port: int, n: int, tmp: Path) -> float:
    """Seconds for redis-cli --pipe to load the same entries (file prepared untimed)."""
    raw_key = keys.period_keys(BOARD, "all-time", "all-time").public + ":raw"
    pipe_file = tmp / "load.resp"
    write_pipe_file(settings.postgres_url or "", raw_key, pipe_file)
    cli = find_redis_server().parent / "redis-cli"
    started = time.perf_counter()
    with pipe_file.open("rb") as source:
        subprocess.run(
            [str(cli), "-p", str(redis_port), "--pipe"],
            stdin=source,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    seconds = time.perf_counter() - started
    pipe_file.unlink()
    count = subprocess.run(
        [str(cli), "-p", str(redis_port), "ZCARD", raw_key], capture_output=True, text=True
    ).stdout.strip()
    assert int(count) == n, count
    subprocess.run([str(cli), "-p", str(redis_port), "FLUSHALL"], check=True, capture_output=True)
    return seconds


def measure(settings: Settings, redis_port: int, n: int, tmp: Path) -> dict[str, float]:
    rankd_s, per_member = asyncio.run(rankd_rebuild(settings, n))
    raw_s = raw_load(settings, redis_port, n, tmp)
    return {
        "members": n,
        "rankd_members_per_s": n / rankd_s,
        "rankd_seconds": rankd_s,
        "raw_members_per_s": n / raw_s,
        "raw_seconds": raw_s,
        "ratio": raw_s / rankd_s,
        "redis_bytes_per_member": per_member,
    }


PERIODS_BOARD = "bench-periods"
SEGMENT_VALUES = 100
DAY_MS = 86_400_000


def fill_periods(pg_url: str, n: int) -> int:
    """``n`` daily periods (today onwards, one per day and segment value) of 1-3 members
    each; returns the members."""
    days = -(-n // SEGMENT_VALUES)
    today = int(time.time() * 1000) // DAY_MS * DAY_MS
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM player_best WHERE board_id = %s", (PERIODS_BOARD,))
        conn.execute("DELETE FROM periods_seen WHERE board_id = %s", (PERIODS_BOARD,))
        periods = (
            "SELECT to_char(to_timestamp((%(today)s + d::bigint * 86400000) / 1000.0)"
            "  AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS period,"
            "  %(today)s + d::bigint * 86400000 AS start_ms,"
            "  's:v' || lpad(v::text, 3, '0') AS segment, d, v"
            " FROM generate_series(0, %(days)s - 1) d, generate_series(0, %(values)s - 1) v"
            " ORDER BY d, v LIMIT %(n)s"
        )
        params = {"today": today, "days": days, "values": SEGMENT_VALUES, "n": n}
        conn.execute(
            "INSERT INTO periods_seen (board_id, win, period, start_ms, segment)"
            f" SELECT %(b)s, 'daily', period, start_ms, segment FROM ({periods}) p",
            params | {"b": PERIODS_BOARD},
        )
        conn.execute(
            "INSERT INTO player_best (board_id, win, period, segment, player_id, composite,"
            " score, achieved_ms, run_id, time_bucket)"
            " SELECT %(b)s, 'daily', period, segment, 'p' || m, (s::bigint << 23) | m, s,"
            "  start_ms + m, 'r' || d || '-' || v || '-' || m, rankd_time_bucket('p' || m)"
            f" FROM ({periods}) p, LATERAL (SELECT m, (random() * 1e6)::bigint AS s"
            "  FROM generate_series(1, 1 + (d + v) %% 3) m) g",
            params | {"b": PERIODS_BOARD},
        )
        conn.execute("VACUUM ANALYZE player_best")
        row = conn.execute(
            "SELECT count(*) FROM player_best WHERE board_id = %s", (PERIODS_BOARD,)
        ).fetchone()
    return int(row[0]) if row else 0


async def rebuild_periods(settings: Settings, n: int, members: int) -> dict[str, float]:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(PERIODS_BOARD, {"windows": ["daily"], "segments": ["s"]})
        await runtime.redis.client.flushall()
        started = time.perf_counter()
        report = await runtime.rebuilder.rebuild()  # whole, as after a Redis restart
        seconds = time.perf_counter() - started
        assert report is not None and report.periods >= n, report
        await runtime.redis.client.flushall(asynchronous=True)
    finally:
        await runtime.close()
    return {
        "periods": n,
        "members": members,
        "seconds": seconds,
        "periods_per_s": n / seconds,
        "members_per_s": members / seconds,
        "ms_per_period": 1000 * seconds / n,
    }


def main_periods(counts: list[int]) -> None:
    results = []
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        try:
            settings = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
            )
            asyncio.run(prepare(settings))
            for n in counts:
                members = fill_periods(servers.postgres_url, n)
                result = asyncio.run(rebuild_periods(settings, n, members))
                results.append(result)
                print(
                    f"{n:>9,} periods, {members:,} members: rebuilt in {result['seconds']:.2f}s"
                    f" ({result['periods_per_s']:,.0f} periods/s,"
                    f" {result['members_per_s']:,.0f} members/s,"
                    f" {result['ms_per_period']:.3f} ms a period)"
                )
        finally:
            servers.stop()
    write_result(
        "rebuild_periods",
        {
            "command": " ".join(["python -m bench.rebuild_rate", *sys.argv[1:]]),
            "results": results,
            "method": "N daily periods of one board with a segment dimension, 1-3 members"
            " each, restored whole (rankd's rebuild after a Redis restart)",
        },
    )


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
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        if args.topology == "single":
            servers: Any = start_embedded(Path(tmp) / "servers")
        else:
            servers = start_topology(Path(tmp) / "servers", args.topology)
        try:
            base = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
            )

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
                fill(servers.postgres_url, n, first)
                for k in args.shards[1:]:
                    copy_board(servers.postgres_url, first, streams_board(k))
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
        finally:
            servers.stop()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--periods", type=int, nargs="+", help="tiny periods instead")
    parser.add_argument("--streams", type=int, nargs="+", help="compare these stream counts")
    parser.add_argument("--shards", type=int, nargs="+", default=[1], help="with --streams")
    parser.add_argument("--topology", choices=["single", "cluster"], default="single")
    parser.add_argument("--rounds", type=int, default=1, help="A B B A rounds (--streams)")
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    if args.periods:
        main_periods(args.periods)
        return
    if args.streams:
        main_streams(args)
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        try:
            assert servers.redis is not None
            settings = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
            )
            asyncio.run(prepare(settings))
            for n in args.sizes:
                started = time.perf_counter()
                fill(servers.postgres_url, n)
                print(f"filled {n:,} rows in {time.perf_counter() - started:.1f}s", file=sys.stderr)
                result = measure(settings, servers.redis.port, n, Path(tmp))
                results.append(result)
                print(
                    f"{n:>11,} members: rankd rebuild {result['rankd_members_per_s']:>10,.0f}/s"
                    f" ({result['rankd_seconds']:.2f}s), raw redis-cli --pipe"
                    f" {result['raw_members_per_s']:>10,.0f}/s ({result['raw_seconds']:.2f}s),"
                    f" ratio {result['ratio']:.2f}, {result['redis_bytes_per_member']:.0f} B/member"
                )
        finally:
            servers.stop()
    print(json.dumps(results))
    largest = max(results, key=lambda r: r["members"]) if results else None
    write_result(
        "rebuild",
        {
            "command": " ".join(["python -m bench.rebuild_rate", *sys.argv[1:]]),
            "sizes": args.sizes,
            "results": results,
            "method": {
                "rankd": "rankd rebuild's code path: COPY out of player_best in composite"
                " order, pipelined multi-member ZADD into a staging key, RENAME",
                "raw": f"redis-cli --pipe of the same entries in the same order, {CHUNK}-member"
                " ZADDs prepared in a file beforehand (the load alone is timed)",
            },
            "targets": None
            if largest is None
            else {
                "members": largest["members"],
                "members_per_s": {
                    "target": f">= {TARGET_MEMBERS_PER_S}",
                    "measured": round(largest["rankd_members_per_s"], 1),
                    "met": largest["rankd_members_per_s"] >= TARGET_MEMBERS_PER_S,
                },
                "ratio_to_raw": {
                    "target": f">= {TARGET_RATIO}",
                    "measured": round(largest["ratio"], 3),
                    "met": largest["ratio"] >= TARGET_RATIO,
                },
                "redis_bytes_per_member": {
                    "target": f"<= {TARGET_BYTES_PER_MEMBER}",
                    "measured": round(largest["redis_bytes_per_member"], 1),
                    "met": largest["redis_bytes_per_member"] <= TARGET_BYTES_PER_MEMBER,
                },
            },
        },
    )


if __name__ == "__main__":
    main()
