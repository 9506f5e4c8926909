"""The default mode of ``python -m bench.rebuild_rate`` (bench/rebuild_rate.py): one
all-time period of N members filled into PostgreSQL, restored by ``rankd rebuild``'s code
path and, beside it, loaded raw by ``redis-cli --pipe``; the board (``prepare``, ``fill``)
also serves the other modes and bench/restart.py."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from bench import cpu
from rankd.embedded import find_redis_server
from rankd.runtime import Runtime
from rankd.settings import Settings
from rankd.stores.redis import keys

BOARD = "bench-rebuild"
CHUNK = 1000


def fill(pg_url: str, n: int, board: str = BOARD, *, analyze: bool = True) -> None:
    """N members of one all-time period, generated inside PostgreSQL (default codec: 23
    time bits, so composite = score << 23 | reversed time units); ``analyze``: refresh the
    table's statistics after (a benchmark's plans; a test can skip it). Also
    tests/system/test_repairs.py's board."""
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
        if analyze:
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


async def redis_busy(redis: Redis) -> cpu.RedisBusy:
    """cpu.redis_busy_of, read through an asyncio client."""
    return cpu.redis_busy_of(await redis.info("cpu"), await redis.info("commandstats"))


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


async def rankd_rebuild(
    settings: Settings, n: int, processes: dict[str, list[int]]
) -> tuple[float, float, dict[str, float]]:
    """(seconds, Redis bytes per member, where the CPU went) of the rebuild of the whole
    period; ``processes``: the servers' pids by name (bench/cpu.py's groups)."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.redis.client.flushall()
        empty = await used_memory(runtime.redis.client)
        before = await redis_busy(runtime.redis.client)
        # read while the rebuild's connections are open, so their backends are counted
        cpu_before, own_before = cpu.snapshot(processes), time.process_time()
        report = await runtime.rebuilder.rebuild(board=BOARD)
        busy = cpu.redis_busy_between(before, await redis_busy(runtime.redis.client))
        assert report is not None and report.members == n, report
        cpu_after, own_s = cpu.snapshot(processes), time.process_time() - own_before
        # CPU microseconds per member by process: over the machine's cores, their sum
        # bounds the rate whatever the overlap
        spent = cpu.budget(cpu_before, cpu_after, n, report.seconds)
        busy |= {
            "redis_us_per_member": spent["redis"],
            "postgres_us_per_member": spent["postgres"],
            "python_us_per_member": round(own_s * 1e6 / n, 1),  # this process alone
            "machine_us_per_member": spent["machine"],  # anyone's: both cores
            "machine_busy": spent["machine_busy"],  # the share of both cores in use
        }
        per_member = (await used_memory(runtime.redis.client) - empty) / n
        print(f"rebuilt {n:,} members in {report.seconds:.1f}s, {per_member:.1f} B/member")
        print(f"  CPU during it: {busy}")
        await runtime.redis.client.flushall(asynchronous=True)  # a large flush blocks seconds
    finally:
        await runtime.close()
    return report.seconds, per_member, busy


def raw_load(
    settings: Settings, redis_port: int, n: int, tmp: Path
) -> tuple[float, dict[str, float]]:
    """Seconds for redis-cli --pipe to load the same entries (file prepared untimed), and
    Redis's own busy seconds meanwhile."""
    raw_key = keys.period_keys(BOARD, "all-time", "all-time").public + ":raw"
    pipe_file = tmp / "load.resp"
    write_pipe_file(settings.postgres_url or "", raw_key, pipe_file)
    cli = find_redis_server().parent / "redis-cli"
    client = SyncRedis(port=redis_port)
    before = cpu.redis_busy_of(client.info("cpu"), client.info("commandstats"))
    started = time.perf_counter()
    with pipe_file.open("rb") as source:
        subprocess.run(
            [str(cli), "-p", str(redis_port), "--pipe"],
            stdin=source,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    seconds = time.perf_counter() - started
    busy = cpu.redis_busy_between(
        before, cpu.redis_busy_of(client.info("cpu"), client.info("commandstats"))
    )
    client.close()
    pipe_file.unlink()
    count = subprocess.run(
        [str(cli), "-p", str(redis_port), "ZCARD", raw_key], capture_output=True, text=True
    ).stdout.strip()
    assert int(count) == n, count
    subprocess.run([str(cli), "-p", str(redis_port), "FLUSHALL"], check=True, capture_output=True)
    return seconds, busy


def measure(
    settings: Settings, redis_port: int, n: int, tmp: Path, processes: dict[str, list[int]]
) -> dict[str, Any]:
    rankd_s, per_member, busy = asyncio.run(rankd_rebuild(settings, n, processes))
    raw_s, raw_busy = raw_load(settings, redis_port, n, tmp)
    print(f"  Redis busy during redis-cli --pipe: {raw_busy}")
    return {
        "redis_busy_s": busy,
        "raw_redis_busy_s": raw_busy,
        "members": n,
        "rankd_members_per_s": n / rankd_s,
        "rankd_seconds": rankd_s,
        "raw_members_per_s": n / raw_s,
        "raw_seconds": raw_s,
        "ratio": raw_s / rankd_s,
        "redis_bytes_per_member": per_member,
    }
