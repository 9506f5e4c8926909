"""Entry metadata: what a 200-byte object per entry costs, beside the same board without it.

Two boards of N members each (one all-time period), written the same way in the same run:
every run through the submit path's store call (the scripts that raise the entry and keep
its metadata, 1,000 runs a pipeline, four writers) and into the durable copy as the log
consumer writes it. One board's runs carry no metadata, the other's a 200-byte object
each. For each, on an emptied Redis:

* Redis bytes per member (used_memory before and after: the sorted set, the exact-times
  hashes and, with metadata, the ``:meta`` hash);
* the write rate of the store call (runs/s);
* PostgreSQL bytes per row of ``player_best`` (the table's growth, indexes and TOAST
  included, over its rows);
* the rebuild from PostgreSQL (members/s), which restores the metadata first;
* a top-100 read, p50 and p99 over ``--reads`` reads, plain and with its metadata (the
  HMGET ``include=metadata`` adds).

    python -m bench.metadata --members 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.common import machine_line, pcts, write_result
from bench.rebuild_rate_streams import emptied, primaries_used
from rankd.embedded import start_embedded
from rankd.periods import ALL_TIME, PeriodRef
from rankd.plan import plan
from rankd.runs import Run
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores import standings
from rankd.stores.standings import BestRow, StandingsBatch

CHUNK = 1000
WRITERS = 4
METADATA_BYTES = 200


def metadata_of(i: int) -> str:
    """A 200-byte object, different per run (as a car, a character and a replay id are)."""
    head = {"car": f"car-{i % 97}", "character": f"hero-{i % 13}", "replay": f"rp-{i:012d}"}
    pad = METADATA_BYTES - len(orjson.dumps({**head, "notes": ""}))
    text = orjson.dumps({**head, "notes": "x" * pad}).decode()
    assert len(text) == METADATA_BYTES
    return text


async def measure(settings: Settings, board_id: str, n: int, with_meta: bool, reads: int) -> Any:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        board = await runtime.boards.get(board_id)
        client = runtime.redis.client
        before = await emptied(client)
        pg_before = await _table_bytes(runtime)
        rng = random.Random(7)
        now = int(time.time() * 1000) - 60_000
        chunks = iter(range(0, n, CHUNK))

        async def writer() -> None:
            for start in chunks:
                runs = [
                    Run(
                        f"r{i}",
                        f"p{i}",
                        rng.randrange(10**9),
                        now - rng.randrange(10**7),
                        now,
                        metadata=metadata_of(i) if with_meta else "",
                    )
                    for i in range(start, min(start + CHUNK, n))
                ]
                plans = [plan(board, run) for run in runs]
                await runtime.redis.writes.apply(board, plans, ranked=False)
                batch = StandingsBatch.empty()
                for targets in plans:
                    for t in targets:
                        r = t.run
                        assert t.composite is not None
                        row = BestRow(
                            r.player_id, t.composite, r.score, r.ended_at_ms, r.run_id,
                            r.metadata or None,
                        )  # fmt: skip
                        key = PeriodRef(board_id, t.window, t.period.id, t.segment)
                        batch.add_best(key, t.period.start_ms, row)
                async with runtime.pg.connection() as conn, conn.transaction():
                    await standings.write(conn, batch)

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(WRITERS)))
        write_s = time.perf_counter() - started
        per_member = (await primaries_used(client) - before) / n
        pg_bytes = await _table_bytes(runtime) - pg_before  # this board's rows alone
        pg_rows = n

        ref = PeriodRef(board_id, ALL_TIME, ALL_TIME, "")
        plain: list[float] = []
        with_metadata: list[float] = []
        for _ in range(reads):
            t0 = time.perf_counter()
            rows, _ = await runtime.redis.reads.top(ref, 0, 100)
            t1 = time.perf_counter()
            found = await runtime.redis.reads.metadata(ref, [(p, ms) for p, _, ms in rows])
            t2 = time.perf_counter()
            plain.append(t1 - t0)
            with_metadata.append(t2 - t0)
            assert all(found) if with_meta else not any(found)

        await emptied(client)
        report = await runtime.rebuilder.rebuild(board=board_id)
        assert report is not None and report.members == n, report
        rows, _ = await runtime.redis.reads.top(ref, 0, 10)
        found = await runtime.redis.reads.metadata(ref, [(p, ms) for p, _, ms in rows])
        assert all(found) if with_meta else not any(found)
    finally:
        await runtime.close()
    return {
        "members": n,
        "metadata_bytes": METADATA_BYTES if with_meta else 0,
        "redis_bytes_per_member": round(per_member, 1),
        "write_runs_per_s": round(n / write_s),
        "postgres_bytes_per_row": round(pg_bytes / max(pg_rows, 1), 1),
        "rebuild_members_per_s": round(report.members_per_s),
        "top_100": pcts(plain),
        "top_100_with_metadata": pcts(with_metadata),
    }


async def _table_bytes(runtime: Runtime) -> int:
    """player_best's size with its indexes and TOAST, after a VACUUM (so the visibility map
    and free space are the table's own, not the last writes')."""
    async with runtime.pg.connection() as conn:
        await conn.execute("VACUUM player_best")
        cur = await conn.execute("SELECT pg_total_relation_size('player_best')")
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def prepare(settings: Settings, boards: list[str]) -> None:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        for board in boards:
            await runtime.boards.put(board, {"windows": ["all-time"]})
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=1000)
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    os.environ.setdefault("RANKD_REDIS_MAX_MEMORY", f"{max(2, -(-args.members * 900 // 2**30))}gb")
    results = []
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        try:
            settings = Settings(
                redis_url=servers.redis_url,
                postgres_url=servers.postgres_url,
                nats_url=servers.nats_url,
            )
            boards = {False: "bench-meta-none", True: "bench-meta-200"}
            asyncio.run(prepare(settings, list(boards.values())))
            for with_meta, board in boards.items():
                result = asyncio.run(measure(settings, board, args.members, with_meta, args.reads))
                results.append(result)
                print(
                    f"{args.members:,} members, metadata {result['metadata_bytes']} B:"
                    f" Redis {result['redis_bytes_per_member']} B/member,"
                    f" PostgreSQL {result['postgres_bytes_per_row']} B/row,"
                    f" writes {result['write_runs_per_s']:,}/s,"
                    f" rebuild {result['rebuild_members_per_s']:,}/s,"
                    f" top-100 p50 {result['top_100']['p50_ms']} ms,"
                    f" with metadata {result['top_100_with_metadata']['p50_ms']} ms",
                    flush=True,
                )
        finally:
            servers.stop()
    write_result(
        "metadata",
        {
            "command": " ".join(["python -m bench.metadata", *sys.argv[1:]]),
            "results": results,
            "method": "the submit path's store call and the consumer's PostgreSQL write in"
            " process (no HTTP), four writers of 1,000 runs; both boards in the same run",
        },
    )


if __name__ == "__main__":
    main()
