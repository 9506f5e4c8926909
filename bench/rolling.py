"""The rolling-7d window beside a weekly one: what a submit, a read and a day leaving cost.

Two boards of N players each, one window each (``weekly``, ``rolling-7d``), written the
same way in the same run: every run through the submit path's store call (1,000 runs a
pipeline, four writers) and into the durable copy as the log consumer writes it (the
rolling window also keeps each player's best per day). Runs end at random over the last
seven days. For each board, on an emptied Redis:

* the write rate (runs/s) of the store call and the consumer's write together;
* Redis bytes per member, PostgreSQL bytes per player (``player_best``, plus
  ``rolling_days`` for the rolling board: tables, indexes and TOAST);
* a top-100 read and a player's rank, p50 and p99 over ``--reads`` reads.

Then, for the rolling board only, the day change: the window a day later (one day of the
seven leaves), timed whole (services/rolling.py roll: PostgreSQL's recompute, then Redis's
copy rebuilt from it), with the entries it replaced or removed, and Redis's part alone
(the period rebuilt once more).

    python -m bench.rolling --members 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from typing import Any

from bench.common import embedded_settings, machine_line, pcts, write_result
from bench.rebuild_rate_streams import emptied, primaries_used
from rankd.periods import DAY_MS, PeriodRef
from rankd.plan import plan
from rankd.runs import Run
from rankd.runtime import Runtime
from rankd.services import rolling
from rankd.settings import Settings
from rankd.stores import standings
from rankd.stores.redis import keys
from rankd.stores.standings import BestRow, StandingsBatch

CHUNK = 1000
WRITERS = 4
TABLES = {"weekly": ("player_best",), "rolling-7d": ("player_best", "rolling_days")}


async def measure(settings: Settings, board_id: str, window: str, n: int, reads: int) -> Any:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        board = await runtime.boards.get(board_id)
        client = runtime.redis.client
        before = await emptied(client)
        pg_before = await _table_bytes(runtime, TABLES[window])
        rng = random.Random(7)
        now = int(time.time() * 1000) - 60_000
        # every run in the one period read: the rolling window's seven days, the weekly
        # window's current week so far (on a Monday, its first minutes)
        span = 7 * DAY_MS
        if window == "weekly":
            span = max(60_000, now - board.current_period(window, now).start_ms)
        chunks = iter(range(0, n, CHUNK))

        async def writer() -> None:
            for start in chunks:
                ended = [now - rng.randrange(span) for _ in range(start, start + CHUNK)]
                runs = [
                    Run(f"r{i}", f"p{i}", rng.randrange(10**9), ended[i - start], now)
                    for i in range(start, min(start + CHUNK, n))
                ]
                plans = [plan(board, run) for run in runs]
                await runtime.redis.writes.apply(board, plans, ranked=False)
                batch = StandingsBatch.empty()
                for targets in plans:
                    for t in targets:
                        if not t.applies:
                            continue
                        r, composite = t.run, t.composite
                        assert composite is not None
                        row = BestRow(r.player_id, composite, r.score, r.ended_at_ms, r.run_id)
                        key = PeriodRef(board_id, t.window, t.period.id, t.segment)
                        batch.add_best(key, t.period.start_ms, row)
                async with runtime.pg.connection() as conn, conn.transaction():
                    await standings.write(conn, batch)

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(WRITERS)))
        write_s = time.perf_counter() - started
        per_member = (await primaries_used(client) - before) / n
        pg_bytes = await _table_bytes(runtime, TABLES[window]) - pg_before

        period = board.current_period(window, now)
        ref = PeriodRef(board_id, window, period.id, "")
        top: list[float] = []
        rank: list[float] = []
        for i in range(reads):
            t0 = time.perf_counter()
            await runtime.redis.reads.top(ref, 0, 100)
            t1 = time.perf_counter()
            await runtime.redis.reads.entry(ref, f"p{(i * 7919) % n}")
            t2 = time.perf_counter()
            top.append(t1 - t0)
            rank.append(t2 - t1)
        result: dict[str, Any] = {
            "window": window,
            "members": n,
            "write_runs_per_s": round(n / write_s),
            "redis_bytes_per_member": round(per_member, 1),
            "postgres_bytes_per_player": round(pg_bytes / n, 1),
            "top_100": pcts(top),
            "rank": pcts(rank),
        }
        if window == "rolling-7d":
            t0 = time.perf_counter()
            rolled = await rolling.roll(
                runtime.pg, runtime.redis, runtime.rebuilder, board, now + DAY_MS
            )
            result["day_change_s"] = round(time.perf_counter() - t0, 2)
            assert rolled is not None
            result["day_change_entries_changed"] = rolled.changed
            result["members_after"] = await client.zcard(
                keys.period_keys(board_id, window, period.id).public
            )
            # of which Redis's part: the same period rebuilt alone
            t0 = time.perf_counter()
            await runtime.rebuilder.rebuild(board_id, window, period.id)
            result["rebuild_s"] = round(time.perf_counter() - t0, 2)
    finally:
        await runtime.close()
    return result


async def _table_bytes(runtime: Runtime, tables: tuple[str, ...]) -> int:
    """The tables' sizes with indexes and TOAST, after a VACUUM."""
    total = 0
    async with runtime.pg.connection() as conn:
        for table in tables:
            await conn.execute(f"VACUUM {table}")
            cur = await conn.execute(f"SELECT pg_total_relation_size('{table}')")
            row = await cur.fetchone()
            assert row is not None
            total += int(row[0])
    return total


async def prepare(settings: Settings, boards: dict[str, str]) -> None:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        for window, board in boards.items():
            await runtime.boards.put(board, {"windows": [window]})
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=200_000)
    parser.add_argument("--reads", type=int, default=1000)
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    os.environ.setdefault("RANKD_REDIS_MAX_MEMORY", f"{max(2, -(-args.members * 900 // 2**30))}gb")
    results = []
    with embedded_settings() as settings:
        boards = {"weekly": "bench-weekly", "rolling-7d": "bench-rolling"}
        asyncio.run(prepare(settings, boards))
        for window, board in boards.items():
            result = asyncio.run(measure(settings, board, window, args.members, args.reads))
            results.append(result)
            print(
                f"{window}: {args.members:,} players: writes {result['write_runs_per_s']:,}/s,"
                f" Redis {result['redis_bytes_per_member']} B/member,"
                f" PostgreSQL {result['postgres_bytes_per_player']} B/player,"
                f" top-100 p50 {result['top_100']['p50_ms']} ms,"
                f" rank p50 {result['rank']['p50_ms']} ms"
                + (
                    f", a day leaving: {result['day_change_s']} s"
                    f" (Redis's rebuild {result['rebuild_s']} s),"
                    f" {result['day_change_entries_changed']:,} entries replaced or removed"
                    if "day_change_s" in result
                    else ""
                ),
                flush=True,
            )
    write_result(
        "rolling",
        {
            "command": " ".join(["python -m bench.rolling", *sys.argv[1:]]),
            "results": results,
            "method": "the submit path's store call and the consumer's PostgreSQL write in"
            " process (no HTTP), four writers of 1,000 runs; both boards in the same run",
        },
    )


if __name__ == "__main__":
    main()
