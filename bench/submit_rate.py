"""Single-run submit rate and latency from a plain local HTTP client.

Starts embedded servers and `rankd serve` in a temporary directory, then drives
``POST /v1/boards/{b}/runs`` from ``--concurrency`` connections for ``--seconds`` and
prints runs/s and latency percentiles. Each run is durable in the log before its answer.

    python -m bench.submit_rate --seconds 10 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench.rawhttp import Connection
from rankd.embedded import free_port, start_embedded

ADMIN, SERVER = "bench-admin", "bench-server"


def machine() -> str:
    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{os.cpu_count()} cores, {model}, {python}"


async def wait_ready(base: str, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    async with httpx.AsyncClient(base_url=base) as http:
        while time.monotonic() < deadline:
            try:
                if (await http.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("service did not become ready")


async def drive(port: int, seconds: float, concurrency: int, players: int) -> list[float]:
    board = f"bench-{random.randrange(10**9)}"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        created = await http.put(
            f"/v1/boards/{board}",
            json={"windows": ["all-time", "daily", "weekly"]},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        created.raise_for_status()
    headers = {"Authorization": f"Bearer {SERVER}"}
    path = f"/v1/boards/{board}/runs"
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    counter = iter(range(10**12))

    async def worker() -> None:
        nonlocal errors
        rng = random.Random()
        conn = await Connection.open("127.0.0.1", port)
        try:
            while time.monotonic() < deadline:
                body = orjson.dumps(
                    {
                        "run_id": f"r{next(counter)}",
                        "player_id": f"p{rng.randrange(players)}",
                        "score": rng.randrange(1_000_000),
                    }
                )
                started = time.perf_counter()
                status, _ = await conn.request("POST", path, body, headers)
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    errors += 1
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    if errors:
        print(f"errors: {errors}", file=sys.stderr)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=1, help="rankd serve --workers")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        servers = start_embedded(Path(tmp) / "servers")
        port = free_port()
        env = {
            **os.environ,
            "RANKD_REDIS_URL": servers.redis_url,
            "RANKD_POSTGRES_URL": servers.postgres_url,
            "RANKD_NATS_URL": servers.nats_url,
            "RANKD_ADMIN_KEYS": ADMIN,
            "RANKD_SERVER_KEYS": SERVER,
            "RANKD_LOG_LEVEL": "warning",
        }
        command = [sys.executable, "-m", "rankd.cli", "serve", "--port", str(port)]
        service = subprocess.Popen([*command, "--workers", str(args.workers)], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(wait_ready(base))
            latencies = asyncio.run(drive(port, args.seconds, args.concurrency, args.players))
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(30)
            servers.stop()

    latencies.sort()
    n = len(latencies)
    pct = {p: latencies[min(n - 1, int(n * p / 100))] * 1000 for p in (50, 90, 99)}
    print(f"machine: {machine()}")
    print(
        f"single-run submits, 3 windows, {args.workers} worker(s), concurrency {args.concurrency},"
        f" {args.seconds:.0f} s: "
        f"{n / args.seconds:,.0f} runs/s; p50 {pct[50]:.2f} ms, p90 {pct[90]:.2f} ms, "
        f"p99 {pct[99]:.2f} ms (mean {statistics.fmean(latencies) * 1000:.2f} ms)"
    )


if __name__ == "__main__":
    main()
