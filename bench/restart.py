"""Restart cost: a clean Redis restart with N members, restored by replaying the log's tail
(the recorded position is readable) against today's full rebuild from PostgreSQL.

It fills ``player_best`` with one all-time period of N members (and N player names), loads
them into Redis with the rebuild, records the log position, then logs a tail of T messages
(10 runs each) the way a clean restart finds it: logged after the last recorded position.
Then, twice, Redis is stopped (SIGTERM: the AOF is fsynced) and started from its AOF, and
the service's restore code (services/rebuild/restart.py) is timed:

* tail: the position is readable, so only the T messages are replayed (plus the names and
  profile copies, which are not in the log);
* rebuild: the position key is deleted first, as on a wiped Redis, so every period is
  rebuilt from PostgreSQL (the tail's runs are in PostgreSQL by then).

The AOF load itself (the same for both) is reported apart. Writes bench/results/restart.json.

    python -m bench.restart --members 1000000 --tail 1000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from bench.common import machine_line, write_result
from bench.rebuild_rate_measure import BOARD, fill, prepare
from rankd.embedded import EmbeddedServers, start_embedded
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.settings import Settings
from rankd.stores.redis import keys


def fill_names(pg_url: str, n: int) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            # written a day ago: a restart copies again only the players written since
            # its recorded position
            "INSERT INTO players (player_id, name, updated_at)"
            " SELECT 'p' || i, 'player ' || i, now() - interval '1 day'"
            " FROM generate_series(1, %s) AS i ON CONFLICT DO NOTHING",
            (n,),
        )


async def load(settings: Settings, n: int, tail: int) -> int:
    """Redis holds the N members, verified, with the log position recorded; then ``tail``
    messages are logged after it. Returns the position."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.redis.client.flushall()
        report = await runtime.rebuilder.rebuild()
        assert report is not None and report.members >= n, report
        # one message applied, so the log has a position to record
        now = int(time.time() * 1000)
        first = [Run("head-0", "p1", 1, now, now)]
        await runtime.runlog.publish(BOARD, encode_message(BOARD, first), "head-0")
        await replay(runtime.runlog, runtime.applier, 1)
        position = await runtime.runlog.last_sequence()
        assert await runtime.redis.positions.record_position(position, int(time.time() * 1000)) == [
            1
        ]
        now = int(time.time() * 1000)
        rng = random.Random(1)
        for m in range(tail):
            runs = [
                Run(f"tail-{m}-{i}", f"p{rng.randint(1, n)}", rng.randint(0, 10**9), now, now)
                for i in range(10)
            ]
            await runtime.runlog.publish(BOARD, encode_message(BOARD, runs), f"tail-{m}")
        return position
    finally:
        await runtime.close()


def restart_redis(servers: EmbeddedServers) -> float:
    """Stop Redis cleanly and start it from its AOF; the seconds until it answers."""
    assert servers.redis is not None
    servers.redis.stop()
    started = time.perf_counter()
    servers.redis.start()  # returns once PING answers: the AOF is loaded
    return time.perf_counter() - started


async def restore(settings: Settings, wipe_position: bool) -> tuple[float, str]:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        if wipe_position:
            await runtime.redis.client.delete(keys.LOG_POSITION)
        started = time.perf_counter()
        report = await runtime.restorer.restore(lambda stage: None)
        seconds = time.perf_counter() - started
        assert report is not None, "Redis was still verified after a restart"
        return seconds, report.describe()
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--tail", type=int, default=1000, help="log messages after the position")
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
            asyncio.run(prepare(settings))
            started = time.perf_counter()
            fill(servers.postgres_url, args.members)
            fill_names(servers.postgres_url, args.members)
            print(f"filled {args.members:,} rows in {time.perf_counter() - started:.1f}s")
            position = asyncio.run(load(settings, args.members, args.tail))
            aof_tail = restart_redis(servers)
            tail_s, tail_said = asyncio.run(restore(settings, wipe_position=False))
            print(f"AOF load {aof_tail:.2f}s; {tail_said}; restore {tail_s:.2f}s")
            aof_rebuild = restart_redis(servers)
            rebuild_s, rebuild_said = asyncio.run(restore(settings, wipe_position=True))
            print(f"AOF load {aof_rebuild:.2f}s; {rebuild_said}; restore {rebuild_s:.2f}s")
        finally:
            servers.stop()
    result = {
        "members": args.members,
        "tail_messages": args.tail,
        "position": position,
        "tail": {
            "aof_load_s": round(aof_tail, 3),
            "restore_s": round(tail_s, 3),
            "said": tail_said,
        },
        "rebuild": {
            "aof_load_s": round(aof_rebuild, 3),
            "restore_s": round(rebuild_s, 3),
            "said": rebuild_said,
        },
        "speedup": round(rebuild_s / tail_s, 1) if tail_s else None,
    }
    print(
        f"{args.members:,} members, {args.tail} tail messages: tail replay {tail_s:.2f}s,"
        f" full rebuild {rebuild_s:.2f}s (x{result['speedup']}); AOF load {aof_tail:.2f}s"
    )
    write_result(
        "restart",
        {
            "command": " ".join(["python -m bench.restart", *sys.argv[1:]]),
            "result": result,
            "method": "a clean Redis restart (SIGTERM, AOF fsynced) with N members; the"
            " service's restore code timed after the AOF is loaded: tail replay from the"
            " recorded log position vs a full rebuild from PostgreSQL (position key deleted)",
        },
    )


if __name__ == "__main__":
    main()
