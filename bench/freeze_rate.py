"""Freeze rate: a closed period's standings archived into PostgreSQL, beside a server-side copy.

It fills ``player_best`` with one closed daily period of N members (random scores and
times, valid composites, a tenth of the players named), loads it into Redis with the
rebuild's code path (untimed), then in the same run:

* ``rankd freeze``'s code path, one season job pass: pages of ZREVRANGE (and the names)
  out of Redis, ranks assigned, ``COPY`` into ``archive_entries``, timed end to end;
* the same from ``player_best`` (a period whose Redis key was lost);
* the baseline: PostgreSQL alone, ``INSERT INTO archive_entries SELECT`` the same rows
  ranked by a window function from ``player_best`` (no client, no Redis);
* the period leaving Redis afterwards (retention 0: mark archived, UNLINK), timed.

It prints entries/s for each, the ratio to the baseline, and writes
bench/results/freeze.json.

    python -m bench.freeze_rate            # 1,000,000 entries
    python -m bench.freeze_rate --quick    # 100,000 entries
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.common import machine_line, write_result
from rankd.embedded import start_embedded
from rankd.periods import PeriodRef, period_at
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores.redis import keys

BOARD = "bench-freeze"
NAMED_SHARE = 10  # one player in this many has a display name


def closed_period() -> str:
    """A daily period two days ago: closed once grace is 0, inside the default retention."""
    return period_at("daily", int((datetime.now(UTC) - timedelta(days=2)).timestamp() * 1000)).id


def fill(pg_url: str, period: str, n: int) -> None:
    """N members of one daily period, generated inside PostgreSQL (default codec: 23 time
    bits, so composite = score << 23 | reversed time units), and names for some players."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for table in ("player_best", "periods_seen"):
            conn.execute(f"DELETE FROM {table} WHERE board_id = %s", (BOARD,))
        conn.execute("TRUNCATE period_archives, archive_entries")
        conn.execute(
            "INSERT INTO player_best"
            " (board_id, win, period, player_id, composite, score, achieved_ms, run_id)"
            " SELECT %s, 'daily', %s, 'p' || i, (s::bigint << 23) | t, s, 0, 'r' || i"
            " FROM (SELECT i, (random() * 1e6)::bigint AS s, (random() * 8388607)::bigint AS t"
            "       FROM generate_series(1, %s) AS i) g",
            (BOARD, period, n),
        )
        conn.execute(
            "INSERT INTO players (player_id, name)"
            " SELECT 'p' || i, 'player number ' || i FROM generate_series(1, %s, %s) AS i"
            " ON CONFLICT (player_id) DO NOTHING",
            (n, NAMED_SHARE),
        )
        start_ms = int(datetime.fromisoformat(f"{period}T00:00:00+00:00").timestamp() * 1000)
        conn.execute(
            "INSERT INTO periods_seen VALUES (%s, 'daily', %s, %s)", (BOARD, period, start_ms)
        )
        conn.execute("VACUUM ANALYZE player_best")


async def prepare(settings: Settings) -> None:
    """Migrations and the board: a daily window whose periods close at once."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(BOARD, {"windows": ["daily"], "grace_seconds": 0})
    finally:
        await runtime.close()


async def clear_archive(runtime: Runtime) -> None:
    async with runtime.pg.connection() as conn:
        await conn.execute("TRUNCATE period_archives, archive_entries")
        await conn.execute("VACUUM ANALYZE archive_entries")


async def rankd_freeze(settings: Settings, period: str, n: int, *, from_redis: bool) -> float:
    """Seconds of one season pass freezing the period (from Redis, or from player_best)."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    ref = PeriodRef(BOARD, "daily", period)
    try:
        await clear_archive(runtime)
        await runtime.redis.client.flushall()
        if from_redis:
            await runtime.rebuilder.rebuild(board=BOARD)  # names and the period, untimed
            assert await runtime.redis.client.zcard(keys.period_keys(*ref).public) == n
        report = await runtime.seasons.run_pass(boards=[BOARD])
        assert report.frozen == 1 and report.entries == n, report
        async with runtime.pg.connection() as conn:
            cur = await conn.execute(
                "SELECT source, entries FROM period_archives WHERE board_id = %s", (BOARD,)
            )
            assert await cur.fetchone() == ("redis" if from_redis else "player_best", n)
        return report.freeze_seconds
    finally:
        await runtime.close()


async def leave_redis(settings: Settings, period: str) -> float:
    """Seconds of the pass that lets the frozen period leave Redis (retention 0)."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.rebuilder.rebuild(board=BOARD)  # back into Redis: it was frozen from PG
        await runtime.boards.put(BOARD, {"retention_days": {"daily": 0}})
        started = time.perf_counter()
        report = await runtime.seasons.run_pass(boards=[BOARD])
        seconds = time.perf_counter() - started
        assert report.archived == 1, report
        ref = PeriodRef(BOARD, "daily", period)
        assert not await runtime.redis.reads.period_exists(ref)
        await runtime.boards.put(BOARD, {"retention_days": {"daily": 8}})
        return seconds
    finally:
        await runtime.close()


def baseline(pg_url: str, period: str, n: int) -> float:
    """Seconds for PostgreSQL alone to write the same archive rows (ranked, named)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE period_archives, archive_entries")
        conn.execute("VACUUM ANALYZE archive_entries")
        started = time.perf_counter()
        cur = conn.execute(
            "INSERT INTO archive_entries (archive_id, rank, player_id, composite, score,"
            " achieved_ms, name)"
            " SELECT 0,"
            '  row_number() OVER (ORDER BY pb.composite DESC, pb.player_id COLLATE "C" DESC),'
            "  pb.player_id, pb.composite, pb.composite >> 23, pb.achieved_ms, pl.name"
            " FROM player_best pb LEFT JOIN players pl ON pl.player_id = pb.player_id"
            " WHERE pb.board_id = %s AND pb.win = 'daily' AND pb.period = %s",
            (BOARD, period),
        )
        seconds = time.perf_counter() - started
        assert cur.rowcount == n
        conn.execute("TRUNCATE period_archives, archive_entries")
    return seconds


def measure(settings: Settings, period: str, n: int) -> dict[str, Any]:
    pg_url = settings.postgres_url or ""
    redis_s = asyncio.run(rankd_freeze(settings, period, n, from_redis=True))
    unlink_s = asyncio.run(leave_redis(settings, period))
    pb_s = asyncio.run(rankd_freeze(settings, period, n, from_redis=False))
    base_s = baseline(pg_url, period, n)
    return {
        "entries": n,
        "rankd_entries_per_s": n / redis_s,
        "rankd_seconds": redis_s,
        "from_player_best_entries_per_s": n / pb_s,
        "from_player_best_seconds": pb_s,
        "baseline_entries_per_s": n / base_s,
        "baseline_seconds": base_s,
        "ratio": base_s / redis_s,
        "leave_redis_seconds": unlink_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="100,000 entries")
    parser.add_argument("--entries", type=int, default=None)
    args = parser.parse_args()
    n = args.entries or (100_000 if args.quick else 1_000_000)
    print(f"machine: {machine_line()}")
    period = closed_period()
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        try:
            settings = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
                season_settle_s=0,
            )
            asyncio.run(prepare(settings))
            started = time.perf_counter()
            fill(servers.postgres_url, period, n)
            print(f"filled {n:,} rows in {time.perf_counter() - started:.1f}s", file=sys.stderr)
            result = measure(settings, period, n)
        finally:
            servers.stop()
    print(
        f"{n:>11,} entries: rankd freeze {result['rankd_entries_per_s']:>10,.0f}/s"
        f" ({result['rankd_seconds']:.2f}s), from player_best"
        f" {result['from_player_best_entries_per_s']:>10,.0f}/s, PostgreSQL INSERT SELECT"
        f" {result['baseline_entries_per_s']:>10,.0f}/s ({result['baseline_seconds']:.2f}s),"
        f" ratio {result['ratio']:.2f}; left Redis in {result['leave_redis_seconds']:.3f}s"
    )
    write_result(
        "freeze",
        {
            "command": " ".join(["python -m bench.freeze_rate", *sys.argv[1:]]),
            "quick": args.quick,
            "results": [result],
            "method": {
                "rankd": "one season job pass (rankd freeze's code path): ZREVRANGE pages of"
                " 10,000 and their names out of Redis, COPY into archive_entries (primary key"
                " by rank, index by player), one transaction",
                "from_player_best": "the same pass for a period whose Redis key is gone:"
                " a server-side cursor over player_best in Redis's order",
                "baseline": "PostgreSQL alone: INSERT INTO archive_entries SELECT the same"
                " rows ranked by row_number() from player_best (no client, no Redis)",
                "leave_redis": "the pass that marks the period archived and UNLINKs its key",
            },
        },
    )


if __name__ == "__main__":
    main()
