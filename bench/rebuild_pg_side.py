"""Where a rebuild's time goes on PostgreSQL's side (issue 29's rebuild rate).

One all-time period of N members (bench/rebuild_rate_measure.py's board), then, with no
Redis involved, the rebuild's own queries run to completion and timed: the entry pages
(ZADD arguments in RESP, stores/rebuild/pages.py ENTRY_PAGE_SQL), the exact-times groups
(TIME_GROUPS_SQL), the same entry pages with the member string precomputed in a column
(after a VACUUM FULL, so both read an unbloated table), and an ordered scan of the rows with
nothing formatted: the floor of what PostgreSQL must do.

    python -m bench.rebuild_pg_side --members 1000000

Compare with ``python -m bench.rebuild_rate --sizes N`` (the whole rebuild) in the same
session. Prints only; the probe alters its own throwaway database (a column added).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import psycopg

from bench.common import machine_line
from bench.rebuild_rate_measure import BOARD, fill
from rankd.embedded import start_embedded
from rankd.periods import PeriodRef
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores.order_sql import entry_member_sql
from rankd.stores.rebuild import pages as rebuild_pages


async def _pages(conn: psycopg.AsyncConnection[object], sql: str, ref: PeriodRef) -> int:
    members = 0
    async for count, _ in rebuild_pages.pages(conn, sql, ref, (-1, "")):
        members += count
    return members


async def measure(settings: Settings, pg_url: str, n: int) -> None:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(BOARD, {"windows": ["all-time"]})
    finally:
        await runtime.close()
    fill(pg_url, n)
    ref = PeriodRef(BOARD, "all-time", "all-time", "")
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for label in ("entry pages", "entry pages, again"):
            started = time.perf_counter()
            found = await _pages(conn, rebuild_pages.ENTRY_PAGE_SQL, ref)
            print(f"{label}: {found:,} members in {time.perf_counter() - started:.2f}s")
        async with conn.transaction():
            started = time.perf_counter()
            fields = 0
            async for _, count, _ in rebuild_pages.time_groups(conn, ref, n):
                fields += count
            print(f"exact-times groups: {fields:,} fields in {time.perf_counter() - started:.2f}s")
        await conn.execute("ALTER TABLE player_best ADD COLUMN member_pre text")
        await conn.execute(
            f"UPDATE player_best SET member_pre = {entry_member_sql()} WHERE board_id = %s",
            (BOARD,),
        )
        await conn.execute("VACUUM FULL ANALYZE player_best")
        precomputed = rebuild_pages.ENTRY_PAGE_SQL.replace(entry_member_sql(), "member_pre")
        for label, sql in (
            ("entry pages, member precomputed", precomputed),
            ("entry pages, as the rebuild reads them", rebuild_pages.ENTRY_PAGE_SQL),
        ):
            started = time.perf_counter()
            found = await _pages(conn, sql, ref)
            print(f"{label}: {found:,} members in {time.perf_counter() - started:.2f}s")
        started = time.perf_counter()
        cur = await conn.execute(
            "SELECT count(*) FROM (SELECT player_id FROM player_best WHERE board_id = %s"
            " ORDER BY composite, player_id) rows",
            (BOARD,),
        )
        row = await cur.fetchone()
        print(f"ordered scan, nothing formatted: {row} in {time.perf_counter() - started:.2f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=1_000_000)
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        try:
            settings = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
            )
            asyncio.run(measure(settings, servers.postgres_url, args.members))
        finally:
            servers.stop()


if __name__ == "__main__":
    main()
