"""A league beside the same weekly board without one: what placement, a cohort read and the
moves at the freeze cost.

Two boards of N players each, one weekly window each, the second a league (three tiers,
cohorts of 30: N / 30 cohorts), written the same way in the same run: every run through the
submit path's calls (the league board's placement script first, then the store call, 1,000
runs a pipeline, four writers) and into the durable copy as the log consumer writes it (the
league board's placements too). For each board, on an emptied Redis:

* the write rate (runs/s), Redis bytes per player (the league's placement keys included)
  and PostgreSQL bytes per player (``player_best``, plus ``league_members``);
* reads, p50 and p99 over ``--reads`` reads of random players: on the league board, a
  player's cohort as the route reads it (one script call on one Redis), and beside it in
  two steps as a cluster reads it (the cohort's members, then the friends group read); on
  the plain board, the same group read of 30 players (the baseline: what ranking a cohort
  costs without finding it) and a top-30 read;
* the freeze of the period (archive, and on the league board the moves in the same
  transaction), timed whole.

    python -m bench.leagues --players 1000000
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
from bench.rolling import _table_bytes
from rankd.leagues import League
from rankd.periods import PeriodRef
from rankd.plan import plan
from rankd.runs import Run
from rankd.runtime import Runtime
from rankd.services.leagues import carried_placements
from rankd.services.scope import resolve_scope
from rankd.services.seasons import SeasonJob
from rankd.settings import Settings
from rankd.stores import standings
from rankd.stores.standings import BestRow, StandingsBatch

CHUNK = 1000
WRITERS = 4
LEAGUE = League("weekly", ("bronze", "silver", "gold"), cohort_size=30, promote=5, relegate=5)
TABLES = {"plain": ("player_best",), "league": ("player_best", "league_members")}


async def measure(settings: Settings, board_id: str, kind: str, n: int, reads: int) -> Any:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        board = await runtime.boards.get(board_id)
        leagues = runtime.submitter.leagues
        assert leagues is not None
        client = runtime.redis.client
        before = await emptied(client)
        pg_before = await _table_bytes(runtime, TABLES[kind])
        rng = random.Random(7)
        now = int(time.time() * 1000) - 60_000
        period = board.current_period("weekly", now)
        chunks = iter(range(0, n, CHUNK))

        async def writer() -> None:
            for start in chunks:
                runs = [
                    Run(f"r{i}", f"p{i}", rng.randrange(10**9), now - rng.randrange(60_000), now)
                    for i in range(start, min(start + CHUNK, n))
                ]
                if kind == "league":
                    runs = await leagues.place(board, runs)
                plans = [plan(board, run) for run in runs]
                await runtime.redis.writes.apply(board, plans, ranked=False)
                batch = StandingsBatch.empty()
                for targets in plans:
                    for t in targets:
                        assert t.applies and t.composite is not None
                        r = t.run
                        row = BestRow(r.player_id, t.composite, r.score, r.ended_at_ms, r.run_id)
                        key = PeriodRef(board_id, t.window, t.period.id, t.segment)
                        batch.add_best(key, t.period.start_ms, row)
                async with runtime.pg.connection() as conn, conn.transaction():
                    await standings.write(conn, batch)
                    if kind == "league":
                        await leagues.apply(conn, board, carried_placements(board, plans))

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(WRITERS)))
        write_s = time.perf_counter() - started
        per_player = (await primaries_used(client) - before) / n
        pg_bytes = await _table_bytes(runtime, TABLES[kind]) - pg_before

        scope = resolve_scope(board, "weekly", period.id)
        group: list[float] = []
        two_steps: list[float] = []
        top: list[float] = []
        for i in range(reads):
            player = f"p{(i * 7919) % n}"
            if kind == "league":
                # as the route reads it: one script call on one Redis (Leagues.read)
                t0 = time.perf_counter()
                found = await leagues.read(runtime.reader, scope, ("player", player), None)
                group.append(time.perf_counter() - t0)
                assert found is not None and len(found[2]) == LEAGUE.cohort_size
                # beside it, as a cluster reads it: the cohort, then the group read
                t0 = time.perf_counter()
                size = LEAGUE.cohort_size
                cohort = await leagues.keys.cohort(board_id, period.id, size, ("player", player))
                assert cohort is not None
                rows = await runtime.reader.friends(scope, cohort[2][0], cohort[2][1:])
                two_steps.append(time.perf_counter() - t0)
                assert len(rows["entries"]) == LEAGUE.cohort_size
            else:
                members = [f"p{(i * 7919 + k * 104_729) % n}" for k in range(30)]
                t0 = time.perf_counter()
                rows = await runtime.reader.friends(scope, members[0], members[1:])
                group.append(time.perf_counter() - t0)
                assert len(rows["entries"]) == len(members)
                t1 = time.perf_counter()
                await runtime.reader.top(scope, 30, 0)
                top.append(time.perf_counter() - t1)
        result: dict[str, Any] = {
            "board": kind,
            "players": n,
            "cohorts": -(-n // LEAGUE.cohort_size) if kind == "league" else 0,
            "write_runs_per_s": round(n / write_s),
            "redis_bytes_per_player": round(per_player, 1),
            "postgres_bytes_per_player": round(pg_bytes / n, 1),
            ("cohort_read" if kind == "league" else "group_read_30"): pcts(group),
        }
        if top:
            result["top_30"] = pcts(top)
        if two_steps:
            result["cohort_read_two_steps"] = pcts(two_steps)

        async def applied() -> int | None:
            return None

        job = SeasonJob(
            runtime.redis.reads,
            runtime.redis.seasons,
            runtime.pg,
            runtime.boards,
            runtime.rebuilder,
            applied,
            settle_ms=0,
        )
        t0 = time.perf_counter()
        report = await job.run_pass(
            period.end_ms + board.grace_seconds * 1000 + 1, boards=[board_id]
        )
        result["freeze_s"] = round(time.perf_counter() - t0, 2)
        assert report.frozen == 1 and not report.failed, report
        if kind == "league":
            async with runtime.pg.connection() as conn:
                cur = await conn.execute(
                    "SELECT moved, count(*) FROM league_history WHERE board_id = %s GROUP BY 1",
                    (board_id,),
                )
                result["moved"] = {m: int(c) for m, c in await cur.fetchall()}
    finally:
        await runtime.close()
    return result


async def prepare(settings: Settings, boards: dict[str, str]) -> None:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(boards["plain"], {"windows": ["weekly"]})
        await runtime.boards.put(
            boards["league"], {"windows": ["weekly"], "league": LEAGUE.as_json()}
        )
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--players", type=int, default=200_000)
    parser.add_argument("--reads", type=int, default=2000)
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    os.environ.setdefault("RANKD_REDIS_MAX_MEMORY", f"{max(2, -(-args.players * 900 // 2**30))}gb")
    results = []
    with embedded_settings() as settings:
        boards = {"plain": "bench-weekly", "league": "bench-league"}
        asyncio.run(prepare(settings, boards))
        for kind, board in boards.items():
            result = asyncio.run(measure(settings, board, kind, args.players, args.reads))
            results.append(result)
            read = result.get("cohort_read") or result["group_read_30"]
            print(
                f"{kind}: {args.players:,} players: writes {result['write_runs_per_s']:,}/s,"
                f" Redis {result['redis_bytes_per_player']} B/player,"
                f" PostgreSQL {result['postgres_bytes_per_player']} B/player,"
                f" {'cohort' if kind == 'league' else 'group of 30'} read p50"
                f" {read['p50_ms']} ms p99 {read['p99_ms']} ms,"
                + (
                    f" in two steps p50 {result['cohort_read_two_steps']['p50_ms']} ms,"
                    if "cohort_read_two_steps" in result
                    else ""
                )
                + f" freeze {result['freeze_s']} s"
                + (f", moved {result['moved']}" if "moved" in result else ""),
                flush=True,
            )
    write_result(
        "leagues",
        {
            "command": " ".join(["python -m bench.leagues", *sys.argv[1:]]),
            "results": results,
            "method": "the submit path's calls (placement, store) and the consumer's PostgreSQL"
            " write in process (no HTTP), four writers of 1,000 runs; both boards in one run",
        },
    )


if __name__ == "__main__":
    main()
