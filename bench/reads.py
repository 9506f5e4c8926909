"""Reads at 1M and 10M members (measurement 2) and Redis bytes per member (measurement 5).

For each size one all-time board period is loaded straight into Redis (valid composites for
the board's default codec, streamed through ``redis-cli --pipe`` in score order, as a
rebuild loads it), and Redis's ``used_memory`` delta gives bytes per member. Then, at fixed
offered rates (open loop, latency counted from each request's scheduled start), a mixed read
workload in equal parts:

* top-100: ``GET /v1/boards/{b}/top?n=100``
* player rank: ``GET /v1/boards/{b}/players/{p}``
* around ±5: ``GET /v1/boards/{b}/players/{p}/around?range=5``
* friends of 40: ``GET /v1/boards/{b}/players/{p}/friends?ids=<40 ids>``

through ``rankd serve``, and beside it, at the same offered rates, the same Redis commands
from a bare asyncio redis-py client (the baseline). Each side climbs a ladder of rates until
p99 passes 5 ms; the rate 2,000/s is always measured (the issue's target).

    python -m bench.reads            # 1M and 10M
    python -m bench.reads --quick    # 100k, short steps
"""

# This module is the command (main) and its table; the parts are bench/reads_data.py (the
# board loaded into Redis, its memory, the check) and bench/reads_load.py (the workload, the
# service and redis-py sides, the rate ladder).

from __future__ import annotations

import argparse
import sys
from typing import Any

import redis

from bench.common import create_board, machine_line, servers, service, write_result
from bench.reads_data import check_board, load_board, used_memory
from bench.reads_load import P99_LIMIT_MS, measure_reads, run
from rankd.stores.redis import keys

FULL_RATES = [100.0, 250.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0, 4000.0, 5000.0]
FULL_RATES += [6000.0, 8000.0, 10000.0, 12000.0, 16000.0]
QUICK_RATES = [100.0, 250.0, 500.0, 1000.0, 1500.0, 2000.0, 3000.0, 4000.0, 6000.0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100k members, short steps")
    parser.add_argument("--sizes", type=int, nargs="+", help="override the board sizes")
    parser.add_argument("--seconds", type=float, help="seconds per offered rate")
    parser.add_argument("--workers", type=int, default=1, help="rankd serve --workers")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000, 10_000_000])
    seconds = args.seconds or (2.0 if args.quick else 5.0)
    rates = QUICK_RATES if args.quick else FULL_RATES
    print(f"machine: {machine_line()}")
    results: dict[str, Any] = {}
    with servers() as stack, service(stack, args.workers) as port:
        assert stack.redis is not None
        redis_port = stack.redis.port
        for n in sizes:
            board = f"bench-reads-{n}"
            create_board(port, board)
            key = keys.period_keys(board, "all-time", "all-time").public
            before = used_memory(redis_port)
            load_s = load_board(redis_port, key, n)
            per_member = (used_memory(redis_port) - before) / n
            print(
                f"{n:,} members: loaded in {load_s:.1f}s ({n / load_s:,.0f}/s),"
                f" {per_member:.1f} B/member in Redis",
                flush=True,
            )
            check_board(port, board, n)
            measured = run(measure_reads(port, stack.redis_url, board, n, rates, seconds))
            results[str(n)] = {
                "members": n,
                "load_seconds": round(load_s, 2),
                "redis_bytes_per_member": round(per_member, 1),
                **measured,
            }
            redis.Redis(port=redis_port).delete(key)
    print_table(results)
    write_result(
        "reads",
        {
            "sizes": results,
            "workload": {
                "mix": "equal parts top-100, player rank, around ±5, friends of 40",
                "p99_limit_ms": P99_LIMIT_MS,
                "seconds_per_rate": seconds,
                "rates": rates,
                "service_workers": args.workers,
                "quick": args.quick,
            },
        },
    )


def print_table(results: dict[str, Any]) -> None:
    print()
    print(
        f"{'members':>11} {'B/member':>8} {'side':<8} {'@2000 p50':>9} {'p99':>7}"
        f" {'top p99':>8} {'rank p99':>8} {'around p99':>10} {'friends p99':>11} {'sustained':>10}"
    )
    for n, r in results.items():
        for side in ("rankd", "baseline"):
            at = r[side]["at_2000_per_s"]
            ep = at["by_endpoint"]
            print(
                f"{int(n):>11,} {r['redis_bytes_per_member']:>8.1f} {side:<8}"
                f" {at['p50_ms']:>9.2f} {at['p99_ms']:>7.2f} {ep['top']['p99_ms']:>8.2f}"
                f" {ep['player']['p99_ms']:>8.2f} {ep['around']['p99_ms']:>10.2f}"
                f" {ep['friends']['p99_ms']:>11.2f} {r[side]['highest_sustained_per_s']:>10,.0f}"
            )
        ratio = r["sustained_ratio_rankd_to_baseline"]
        print(f"{'':>11} rankd/baseline sustained: {ratio if ratio is None else f'{ratio:.2f}'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
