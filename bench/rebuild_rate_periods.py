"""``python -m bench.rebuild_rate --periods`` (bench/rebuild_rate.py): many tiny daily
periods of a board with a segment dimension, restored whole as after a Redis restart."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from bench.common import write_result
from bench.rebuild_rate_measure import prepare
from rankd.embedded import start_embedded
from rankd.runtime import Runtime
from rankd.settings import Settings

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
