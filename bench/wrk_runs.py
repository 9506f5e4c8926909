"""Running `wrk` and reading its output, and the log consumer's lag over a run.

One wrk invocation (``wrk -t1 -c50 --latency`` with one of bench/wrk/'s scripts) and its
figures (WrkRun), optionally with the CPU each process group spent per request over it
(bench/cpu.py); LagPoller polls /readyz for the consumer's lag while a run goes on. Used by
``python -m bench.wrk`` (bench/wrk.py) and bench/cluster.py.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import cpu
from bench.common import SERVER

SCRIPTS = Path(__file__).parent / "wrk"
BOARD = "wrk"
PLAYERS = 20_000
THREADS, CONNECTIONS = 1, 50
LATENCY_LINE = re.compile(r"\s*(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)\s*")
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


# --- wrk --------------------------------------------------------------------------------------


@dataclass
class WrkRun:
    """One wrk invocation's figures (latencies in ms)."""

    req_per_s: float
    requests: int
    seconds: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: dict[str, int]
    lag: dict[str, Any] | None = None
    cpu: dict[str, float] | None = None  # µs of CPU per request by process (bench/cpu.py)


def parse_wrk(output: str) -> WrkRun:
    """The figures of ``wrk --latency``'s text output."""
    pct: dict[str, float] = {}
    for line in output.splitlines():
        match = LATENCY_LINE.fullmatch(line)
        if match:
            pct[match[1]] = float(match[2]) * UNIT_MS[match[3]]
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.M)
    done = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", output, re.M)
    if rate is None or done is None or len(pct) != 4:
        raise RuntimeError(f"could not read wrk's output:\n{output}")
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    # wrk prints the socket errors line only when there were some
    counts = map(int, errors.groups()) if errors else (0, 0, 0, 0)
    socket_errors = dict(zip(("connect", "read", "write", "timeout"), counts, strict=True))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return WrkRun(
        req_per_s=float(rate[1]),
        requests=int(done[1]),
        seconds=float(done[2]) * UNIT_MS[done[3]] / 1000,
        p50_ms=pct["50"],
        p75_ms=pct["75"],
        p90_ms=pct["90"],
        p99_ms=pct["99"],
        non_2xx=int(non_2xx[1]) if non_2xx else 0,
        socket_errors=socket_errors,
    )


def wrk_command(load: str, port: int, seconds: int, prefix: str) -> list[str]:
    url = f"http://127.0.0.1:{port}"
    args = {
        "submit": [BOARD, str(PLAYERS), SERVER, prefix],
        "rank": [BOARD, str(PLAYERS)],
        "top10": [BOARD],
    }[load]
    script = SCRIPTS / {"submit": "submit.lua", "rank": "rank.lua", "top10": "top.lua"}[load]
    return [
        "wrk",
        f"-t{THREADS}",
        f"-c{CONNECTIONS}",
        f"-d{seconds}s",
        "--latency",
        "-s",
        str(script),
        url,
        "--",
        *args,
    ]


def run_wrk(
    load: str,
    port: int,
    seconds: int,
    prefix: str,
    processes: Mapping[str, Sequence[int]] | None = None,
) -> WrkRun:
    """One wrk run; with ``processes`` (group name -> root pids) also the CPU each group
    spent per request over it."""
    command = wrk_command(load, port, seconds, prefix)
    before = cpu.snapshot(processes or {})
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    wall = time.perf_counter() - started
    after = cpu.snapshot(processes or {})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    run = parse_wrk(done.stdout)
    if processes is not None:
        run.cpu = cpu.budget(before, after, run.requests, wall)
    if run.non_2xx or any(run.socket_errors.values()):
        # a refused or dropped request is not a served one: these figures would flatter
        raise RuntimeError(
            f"{load}: {run.non_2xx} non-2xx answers, socket errors {run.socket_errors};"
            f" wrk said:\n{done.stdout}"
        )
    return run


# --- the log consumer's lag, from /readyz -----------------------------------------------------


@dataclass
class LagPoller:
    """Polls /readyz once a second from a thread: the consumer's lag over a load run."""

    port: int
    interval_s: float = 1.0
    samples: list[tuple[float, float, int, int]] = field(default_factory=list)
    failures: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._started = time.monotonic()

    def _poll(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                began = time.monotonic()
                self.sample(client)
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def sample(self, client: httpx.Client) -> None:
        try:
            lag = client.get(f"http://127.0.0.1:{self.port}/readyz").json().get("consumer")
        except (httpx.HTTPError, ValueError):
            self.failures += 1
            return
        if isinstance(lag, dict):
            self.samples.append(
                (
                    round(time.monotonic() - self._started, 2),
                    float(lag["oldest_unacked_seconds"]),
                    int(lag["pending"]),
                    int(lag["ack_pending"]),
                )
            )

    @contextlib.contextmanager
    def running(self) -> Iterator[LagPoller]:
        self._started = time.monotonic()
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()
            with httpx.Client(timeout=5) as client:
                self.sample(client)  # the value at the end of the run

    def summary(self, keep_series: bool = False) -> dict[str, Any]:
        if not self.samples:
            return {"samples": 0, "poll_failures": self.failures}
        end = self.samples[-1]
        result: dict[str, Any] = {
            "samples": len(self.samples),
            "poll_failures": self.failures,
            "max_oldest_unacked_s": max(s[1] for s in self.samples),
            "max_pending": max(s[2] for s in self.samples),
            "max_ack_pending": max(s[3] for s in self.samples),
            "end_oldest_unacked_s": end[1],
            "end_pending": end[2],
            "end_ack_pending": end[3],
        }
        if keep_series:
            result["series"] = [list(s) for s in self.samples]
        return result


def wrk_version() -> str:
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    return (done.stdout + done.stderr).splitlines()[0].strip() if done.stdout or done.stderr else ""
