"""Moderation: how fast a ban hides a player, and what banning a long-time player costs.

Against `rankd serve --workers 2` on embedded servers (a ban made through one process must
also hold in the other, which learns of it from PostgreSQL):

* ban latency: for each of N players holding an entry near the top of a busy board (a
  light stream of submits keeps arriving, some of them the player's own), the time from
  sending POST /ban until the public top list no longer shows them, read through both
  processes (polled every 5 ms); and the call's own duration. Baseline in the same run:
  the bare Redis work of hiding one entry (ZREM from the public key, ZADD to a side key in
  one MULTI), as a client of the same Redis sees it.
* a player with entries in 1,000+ periods (3 boards, a run on each of 334 days, daily,
  weekly, monthly and all-time windows): the ban call and the unban call, with the count
  of periods moved.

    python -m bench.moderation           # 60 bans
    python -m bench.moderation --quick   # 15 bans
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from redis.asyncio import Redis

from bench.common import (
    ADMIN_H,
    SERVER_H,
    create_board,
    machine_line,
    servers,
    service,
    write_result,
)

BOARD = "bench-mod"


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000, 2)


async def ban_latency(port: int, bans: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    create_board(port, BOARD, windows=["all-time", "daily"])
    limits = httpx.Limits(max_connections=8)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=10) as http:
        # a board of 2,000 players; the players to ban take the top places one by one
        runs = [
            {"run_id": f"seed-{i}", "player_id": f"p{i}", "score": 1_000 + i} for i in range(2000)
        ]
        for first in range(0, len(runs), 1000):
            response = await http.post(
                f"/v1/boards/{BOARD}/runs:batch",
                json={"runs": runs[first : first + 1000]},
                headers=SERVER_H,
            )
            response.raise_for_status()
        stop = asyncio.Event()
        counter = itertools.count()
        targets = [f"cheat{i}" for i in range(bans)]

        async def stream() -> None:  # about 100 submits/s, a fifth of them from cheats
            while not stop.is_set():
                i = next(counter)
                player = targets[i % bans] if i % 5 == 0 else f"p{i % 2000}"
                body = {"run_id": f"s-{i}", "player_id": player, "score": 500 + i % 400}
                await http.post(f"/v1/boards/{BOARD}/runs", json=body, headers=SERVER_H)
                await asyncio.sleep(0.01)

        streaming = asyncio.create_task(stream())
        hidden: list[float] = []
        calls: list[float] = []
        try:
            for n, player in enumerate(targets):
                body = {"run_id": f"top-{n}", "player_id": player, "score": 10_000_000 + n}
                (
                    await http.post(f"/v1/boards/{BOARD}/runs", json=body, headers=SERVER_H)
                ).raise_for_status()
                started = time.perf_counter()
                call = asyncio.create_task(http.post(f"/v1/players/{player}/ban", headers=ADMIN_H))
                clean = 0
                while clean < 4:  # four clean reads in a row: both processes answered
                    top = (await http.get(f"/v1/boards/{BOARD}/top", params={"n": 3})).json()
                    shown = any(e["player_id"] == player for e in top["entries"])
                    clean = 0 if shown else clean + 1
                    if clean == 1:
                        seen_gone = time.perf_counter() - started
                    await asyncio.sleep(0.005)
                hidden.append(seen_gone)
                (await call).raise_for_status()
                calls.append(time.perf_counter() - started)
        finally:
            stop.set()
            await streaming
    return {
        "bans": bans,
        "hidden_p50_ms": pct(hidden, 50),
        "hidden_p99_ms": pct(hidden, 99),
        "hidden_max_ms": round(max(hidden) * 1000, 2),
        "call_p50_ms": pct(calls, 50),
        "call_p99_ms": pct(calls, 99),
    }


async def redis_baseline(redis_url: str, n: int) -> dict[str, float]:
    redis = Redis.from_url(redis_url)
    samples = []
    try:
        await redis.zadd("bench:baseline", {f"m{i}": i for i in range(2000)})
        for i in range(n):
            started = time.perf_counter()
            pipe = redis.pipeline(transaction=True)
            pipe.zrem("bench:baseline", f"m{i}")
            pipe.zadd("bench:baseline:side", {f"m{i}": i})
            await pipe.execute()
            samples.append(time.perf_counter() - started)
        await redis.delete("bench:baseline", "bench:baseline:side")
    finally:
        await redis.aclose()
    return {"p50_ms": pct(samples, 50), "p99_ms": pct(samples, 99)}


async def shows(http: httpx.AsyncClient, boards: list[str], day: str, total: int) -> None:
    """Wait until each board's top of the daily period ``day`` holds ``total`` entries (a
    top list may be served from the process's cache for up to 0.2 s); fail after 2 s."""
    deadline = time.monotonic() + 2
    params = {"window": "daily", "period": day}
    for board in boards:
        while True:
            top = (await http.get(f"/v1/boards/{board}/top", params=params)).json()
            if top["total"] == total:
                break
            assert time.monotonic() < deadline, top
            await asyncio.sleep(0.02)


async def long_history(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    player = "veteran"
    now = datetime.now(UTC)
    # the newest run's day: in the first hour of a UTC day it is yesterday, not today
    day = (now - timedelta(hours=1)).date().isoformat()
    boards = [f"{BOARD}-h{i}" for i in range(3)]
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        for board in boards:
            create_board(
                port,
                board,
                windows=["all-time", "daily", "weekly", "monthly"],
                grace_seconds=31_536_000,
            )
            runs = [
                {
                    "run_id": f"{board}-d{d}",
                    "player_id": player,
                    "score": 100 + d,
                    "ended_at": (now - timedelta(days=d, hours=1)).isoformat(),
                }
                for d in range(334)
            ]
            response = await http.post(
                f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
            )
            response.raise_for_status()
        periods = 0
        for board in boards:
            for window in ("all-time", "daily", "weekly", "monthly"):
                listed = (
                    await http.get(f"/v1/boards/{board}/periods", params={"window": window})
                ).json()
                periods += len(listed["periods"])
        # the durable copy lists every period the ban sweeps: wait for the consumer
        # (/readyz's lag refreshes every 2 s: idle twice in a row, 2.5 s apart)
        deadline, idle = time.monotonic() + 120, 0
        while idle < 2 and time.monotonic() < deadline:
            await asyncio.sleep(2.5)
            consumer = (await http.get("/readyz")).json().get("consumer") or {}
            busy = consumer.get("pending") or consumer.get("ack_pending")
            idle = 0 if busy else idle + 1
        started = time.perf_counter()
        (await http.post(f"/v1/players/{player}/ban", headers=ADMIN_H)).raise_for_status()
        ban_s = time.perf_counter() - started
        await shows(http, boards, day, 0)
        started = time.perf_counter()
        (await http.delete(f"/v1/players/{player}/ban", headers=ADMIN_H)).raise_for_status()
        unban_s = time.perf_counter() - started
        await shows(http, boards, day, 1)
    return {"periods": periods, "ban_seconds": round(ban_s, 3), "unban_seconds": round(unban_s, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="15 bans")
    args = parser.parse_args()
    bans = 15 if args.quick else 60
    print(f"machine: {machine_line()}")
    with servers() as stack, service(stack, workers=2) as port:
        latency = asyncio.run(ban_latency(port, bans))
        baseline = asyncio.run(redis_baseline(stack.redis_url, 200))
        history = asyncio.run(long_history(port))
    result = {"latency": latency, "redis_baseline": baseline, "long_history": history}
    print(result)
    write_result("moderation", result)


if __name__ == "__main__":
    main()
