"""Shared pieces of the benchmark suite: machine facts, servers, the service, load, results.

Every measurement runs beside its baseline in the same process and the same minutes, since
these machines are noisy; results are written as JSON under bench/results/ and rendered by
bench/report.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from rankd.embedded import EmbeddedServers, NatsServer, free_port, start_embedded
from rankd.embedded.topology import TopologyServers, start_topology
from rankd.settings import Settings

RESULTS = Path(__file__).parent / "results"
ADMIN, SERVER = "bench-admin", "bench-server"
ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}
SERVER_H = {"Authorization": f"Bearer {SERVER}"}


def machine() -> dict[str, Any]:
    model = "unknown cpu"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def pcts(samples: list[float]) -> dict[str, float]:
    """p50 and p99 of ``samples`` (seconds), in ms."""
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 3),
    }


def machine_line() -> str:
    m = machine()
    return f"{m['cores']} cores, {m['cpu']}, {m['python']}"


@contextlib.contextmanager
def servers(nats_sync: str = "always") -> Iterator[EmbeddedServers]:
    """Fresh embedded servers in a temporary directory, stopped afterwards.

    ``nats_sync`` other than "always" (e.g. "2m", JetStream's default) prices durability."""
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        started = start_embedded(Path(tmp))
        if nats_sync != "always":
            assert started.nats is not None
            started.nats.stop()
            started.nats = NatsServer(Path(tmp), sync_interval=nats_sync)
            started.nats.start()
        try:
            yield started
        finally:
            started.stop()


@contextlib.contextmanager
def embedded_settings() -> Iterator[Settings]:
    """The settings of a service in this process on fresh embedded servers (``servers``)."""
    with servers() as started:
        yield Settings(
            redis_url=started.redis_url,
            postgres_url=started.postgres_url,
            nats_url=started.nats_url,
        )


@contextlib.contextmanager
def topology_settings(topology: str, **overrides: Any) -> Iterator[tuple[str, Settings]]:
    """Fresh servers of ``topology`` ("single": the embedded ones; "cluster", "sentinel":
    rankd.embedded.topology's) in a temporary directory, stopped afterwards: PostgreSQL's
    URL (benches fill it directly) and the settings of a service on them, with
    ``overrides``."""
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        if topology == "single":
            started: EmbeddedServers | TopologyServers = start_embedded(Path(tmp) / "servers")
        else:
            started = start_topology(Path(tmp) / "servers", topology)  # type: ignore[arg-type]
        try:
            yield (
                started.postgres_url,
                Settings(
                    redis_url=started.redis_url,
                    postgres_url=started.postgres_url,
                    nats_url=started.nats_url,
                    **overrides,
                ),
            )
        finally:
            started.stop()


@contextlib.contextmanager
def service_process(
    stack: EmbeddedServers,
    workers: int = 1,
    extra_env: Mapping[str, str] | None = None,
    ready_within_s: float = 60.0,
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`rankd serve` on ``stack``; yields its port and process once /readyz answers 200.

    ``extra_env`` adds or overrides service settings (e.g. ``RANKD_RATE_KEY_PER_S``)."""
    port = free_port()
    env = {
        **os.environ,
        "RANKD_REDIS_URL": stack.redis_url,
        "RANKD_POSTGRES_URL": stack.postgres_url,
        "RANKD_NATS_URL": stack.nats_url,
        "RANKD_ADMIN_KEYS": ADMIN,
        "RANKD_SERVER_KEYS": SERVER,
        "RANKD_LOG_LEVEL": "warning",
        **(extra_env or {}),
    }
    command = [sys.executable, "-m", "rankd.cli", "serve", "--port", str(port)]
    process = subprocess.Popen([*command, "--workers", str(workers)], env=env)
    try:
        deadline = time.monotonic() + ready_within_s
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("rankd serve did not become ready")
            time.sleep(0.2)
        yield port, process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def service(
    stack: EmbeddedServers, workers: int = 1, extra_env: Mapping[str, str] | None = None
) -> Iterator[int]:
    """`rankd serve` on ``stack``; yields its port once /readyz answers 200."""
    with service_process(stack, workers, extra_env) as (port, _):
        yield port


def create_board(port: int, board: str, **config: Any) -> None:
    response = httpx.put(f"http://127.0.0.1:{port}/v1/boards/{board}", json=config, headers=ADMIN_H)
    response.raise_for_status()


@dataclass
class Latencies:
    """Request latencies (seconds) and outcomes of one load run."""

    seconds: float
    samples: list[float] = field(default_factory=list)
    errors: int = 0

    def pct(self, p: float) -> float:
        if not self.samples:
            return float("nan")
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000

    @property
    def rate(self) -> float:
        return len(self.samples) / self.seconds

    def summary(self) -> dict[str, float]:
        return {
            "achieved_per_s": round(self.rate, 1),
            "p50_ms": round(self.pct(50), 3),
            "p99_ms": round(self.pct(99), 3),
            "errors": self.errors,
            "requests": len(self.samples),
        }


async def open_loop(
    call: Callable[[int], Awaitable[bool]],
    rate: float,
    seconds: float,
    max_in_flight: int = 256,
    also: Callable[[int], Latencies] | None = None,
) -> Latencies:
    """Offer ``rate`` calls/s for ``seconds`` on a fixed schedule, whatever the answers take.

    Latency counts from the scheduled start, so queueing behind a slow server shows up
    (no coordinated omission). ``call(i)`` returns False for an error answer. ``also(i)``
    names a second record that call ``i`` is counted in too (e.g. per request kind).
    """
    result = Latencies(seconds)
    total = int(rate * seconds)
    start = time.perf_counter()
    gate = asyncio.Semaphore(max_in_flight)

    async def one(i: int, scheduled: float) -> None:
        async with gate:
            ok = await call(i)
        latency = time.perf_counter() - scheduled
        for record in (result,) if also is None else (result, also(i)):
            record.samples.append(latency)
            if not ok:
                record.errors += 1

    tasks = []
    for i in range(total):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, scheduled)))
    await asyncio.gather(*tasks)
    result.seconds = max(seconds, time.perf_counter() - start)
    return result


async def open_loop_by(
    kinds: Sequence[str],
    call: Callable[[int], Awaitable[bool]],
    rate: float,
    seconds: float,
    max_in_flight: int = 256,
) -> tuple[Latencies, dict[str, Latencies]]:
    """open_loop, with latencies also kept per kind (call ``i`` is kind ``kinds[i % n]``)."""
    by_kind = {kind: Latencies(seconds) for kind in kinds}
    mixed = await open_loop(
        call, rate, seconds, max_in_flight, also=lambda i: by_kind[kinds[i % len(kinds)]]
    )
    for record in by_kind.values():
        record.seconds = mixed.seconds
    return mixed, by_kind


async def closed_loop(
    call: Callable[[int], Awaitable[bool]], concurrency: int, seconds: float
) -> Latencies:
    """As many calls as ``concurrency`` workers can make in ``seconds``."""
    result = Latencies(seconds)
    deadline = time.perf_counter() + seconds
    counter = iter(range(10**12))

    async def worker() -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            ok = await call(next(counter))
            result.samples.append(time.perf_counter() - began)
            if not ok:
                result.errors += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return result


async def highest_sustained(
    call: Callable[[int], Awaitable[bool]],
    rates: list[float],
    seconds: float,
    p99_limit_ms: float,
) -> tuple[float, list[dict[str, float]]]:
    """The highest offered rate whose p99 stays within the limit (and every step's figures)."""
    best = 0.0
    steps = []
    for rate in rates:
        lat = await open_loop(call, rate, seconds)
        step = {"offered_per_s": rate, **lat.summary()}
        steps.append(step)
        if lat.pct(99) <= p99_limit_ms and lat.errors == 0 and lat.rate >= 0.95 * rate:
            best = rate
        else:
            break
    return best, steps


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"name": name, "machine": machine(), **payload}, indent=2))
    print(f"wrote {path}")
    return path


def rng(seed: int = 7) -> random.Random:
    return random.Random(seed)


def as_dict(obj: Any) -> Any:
    return asdict(obj)
