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

# This module is the command (main) and the default mode's targets; the parts are
# bench/rebuild_rate_measure.py (the board, rankd rebuild against redis-cli --pipe),
# bench/rebuild_rate_periods.py (--periods) and bench/rebuild_rate_streams.py (--streams).

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.common import machine_line, write_result
from bench.rebuild_rate_measure import CHUNK, fill, measure, prepare
from bench.rebuild_rate_periods import main_periods
from bench.rebuild_rate_streams import main_streams
from rankd.embedded import start_embedded
from rankd.settings import Settings

TARGET_MEMBERS_PER_S = 500_000
TARGET_RATIO = 0.8
TARGET_BYTES_PER_MEMBER = 150  # including each entry's exact achieved time


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
                processes = {
                    name: [server.pid]
                    for name, server in (("redis", servers.redis), ("postgres", servers.postgres))
                    if server is not None and server.pid is not None
                }
                result = measure(settings, servers.redis.port, n, Path(tmp), processes)
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
