"""The HTTP load of ``python -m bench.submits`` (bench/submits.py): keep-alive connections,
single-run and batch submits, the warm-up, the offered-rate ladder and the closed-loop
throughput runs."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from bench.common import SERVER_H, Latencies, closed_loop, highest_sustained, open_loop
from bench.rawhttp import Connection
from bench.submits_base import (
    BATCH_CLIENTS,
    BATCH_SIZE,
    BOARD,
    MAX_CONNECTIONS,
    MAX_SCORE,
    P99_LIMIT_MS,
    PLAYERS,
    SINGLE_CONCURRENCY,
    TARGET_SINGLE_RATE,
    Profile,
)

# --- HTTP load -------------------------------------------------------------------------------


class Pool:
    """Keep-alive connections, one request on each at a time; grows up to ``limit``."""

    def __init__(self, port: int, limit: int = MAX_CONNECTIONS) -> None:
        self.port = port
        self.limit = limit
        self.idle: list[Connection] = []
        self.opened = 0
        self.peak = 0
        self._free = asyncio.Condition()

    async def fill(self, n: int) -> None:
        for _ in range(n - self.opened):
            self.idle.append(await Connection.open("127.0.0.1", self.port))
            self.opened += 1
        self.peak = max(self.peak, self.opened)

    async def _acquire(self) -> Connection:
        async with self._free:
            while True:
                while not self.idle and self.opened >= self.limit:
                    await self._free.wait()
                if not self.idle:
                    break
                conn = self.idle.pop()
                if not conn.reader.at_eof():
                    return conn
                # closed by the server while idle (as a client's pool would, take another)
                self.opened -= 1
                with contextlib.suppress(Exception):
                    await conn.close()
            self.opened += 1
            self.peak = max(self.peak, self.opened)
        try:
            return await Connection.open("127.0.0.1", self.port)
        except OSError:
            await self._drop()
            raise

    async def _drop(self) -> None:
        async with self._free:
            self.opened -= 1
            self._free.notify()

    async def request(self, path: str, body: bytes) -> tuple[int, bytes]:
        """(status, body); status 0 when the connection failed (it is dropped)."""
        try:
            conn = await self._acquire()
        except OSError:
            return 0, b""
        try:
            answer = await conn.request("POST", path, body, SERVER_H)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            with contextlib.suppress(Exception):
                await conn.close()
            await self._drop()
            return 0, b""
        async with self._free:
            self.idle.append(conn)
            self._free.notify()
        return answer

    async def close(self) -> None:
        for conn in self.idle:
            with contextlib.suppress(Exception):
                await conn.close()
        self.idle.clear()


def single_call(pool: Pool, prefix: str, seed: int) -> Callable[[int], Awaitable[bool]]:
    """One single-run submit per call: random player among PLAYERS, unique run id."""
    path = f"/v1/boards/{BOARD}/runs"
    rand = random.Random(seed)
    ids = itertools.count()  # not the call's index: open_loop restarts it at every rate

    async def call(i: int) -> bool:
        body = orjson.dumps(
            {
                "run_id": f"{prefix}{next(ids)}",
                "player_id": f"p{rand.randrange(PLAYERS)}",
                "score": rand.randrange(MAX_SCORE),
            }
        )
        status, _ = await pool.request(path, body)
        return status == 200

    return call


def batch_call(pool: Pool, prefix: str, seed: int) -> Callable[[int], Awaitable[bool]]:
    """One batch of BATCH_SIZE runs per call; False if any run of it was refused."""
    path = f"/v1/boards/{BOARD}/runs:batch"
    rand = random.Random(seed)

    async def call(i: int) -> bool:
        runs = [
            {
                "run_id": f"{prefix}{i}.{k}",
                "player_id": f"p{rand.randrange(PLAYERS)}",
                "score": rand.randrange(MAX_SCORE),
            }
            for k in range(BATCH_SIZE)
        ]
        status, payload = await pool.request(path, orjson.dumps({"runs": runs}))
        return status == 200 and b'"error"' not in payload

    return call


async def warm_up(port: int, seconds: float) -> None:
    """Connections, board cache, script cache and period index touched before timing."""
    pool = Pool(port)
    try:
        await pool.fill(16)
        await closed_loop(single_call(pool, "warm-s", 1), 16, seconds / 2)
        await closed_loop(batch_call(pool, "warm-b", 2), 2, seconds / 2)
    finally:
        await pool.close()


async def single_ladder(port: int, profile: Profile) -> dict[str, Any]:
    """p50/p99 per offered rate, up to the first rate that misses p99 <= 10 ms."""
    pool = Pool(port)
    try:
        await pool.fill(32)
        call = single_call(pool, "l-", 3)
        best, steps = await highest_sustained(
            call, list(profile.rates), profile.step_s, P99_LIMIT_MS
        )
        at_target = next((s for s in steps if s["offered_per_s"] == TARGET_SINGLE_RATE), None)
        if at_target is None:  # the ladder stopped below the target rate: measure it anyway
            lat = await open_loop(call, TARGET_SINGLE_RATE, profile.step_s)
            at_target = {"offered_per_s": TARGET_SINGLE_RATE, **lat.summary()}
        return {
            "p99_limit_ms": P99_LIMIT_MS,
            "step_seconds": profile.step_s,
            "highest_sustained_per_s": best,
            "steps": steps,
            "at_1000_per_s": at_target,
            "connections_peak": pool.peak,
        }
    finally:
        await pool.close()


async def timed_closed(
    call: Callable[[int], Awaitable[bool]], concurrency: int, seconds: float
) -> tuple[Latencies, float]:
    started = time.perf_counter()
    lat = await closed_loop(call, concurrency, seconds)
    return lat, time.perf_counter() - started


async def single_throughput(port: int, seconds: float, tag: str) -> dict[str, Any]:
    pool = Pool(port)
    try:
        await pool.fill(SINGLE_CONCURRENCY)
        call = single_call(pool, f"c{tag}-", 4)
        lat, elapsed = await timed_closed(call, SINGLE_CONCURRENCY, seconds)
    finally:
        await pool.close()
    ok = len(lat.samples) - lat.errors
    return {
        "concurrency": SINGLE_CONCURRENCY,
        "seconds": round(elapsed, 3),
        "runs_per_s": round(ok / elapsed, 1),
        "p50_ms": round(lat.pct(50), 3),
        "p99_ms": round(lat.pct(99), 3),
        "errors": lat.errors,
        "requests": len(lat.samples),
    }


async def batch_throughput(port: int, seconds: float, tag: str) -> dict[str, Any]:
    pool = Pool(port)
    try:
        await pool.fill(BATCH_CLIENTS)
        call = batch_call(pool, f"b{tag}-", 5)
        lat, elapsed = await timed_closed(call, BATCH_CLIENTS, seconds)
    finally:
        await pool.close()
    ok = len(lat.samples) - lat.errors
    return {
        "runs_per_batch": BATCH_SIZE,
        "clients": BATCH_CLIENTS,
        "seconds": round(elapsed, 3),
        "batches": len(lat.samples),
        "runs": ok * BATCH_SIZE,
        "runs_per_s": round(ok * BATCH_SIZE / elapsed, 1),
        "batch_p50_ms": round(lat.pct(50), 3),
        "batch_p99_ms": round(lat.pct(99), 3),
        "errors": lat.errors,
    }
