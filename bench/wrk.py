"""Closed-loop throughput under `wrk`, in the shape the Go peers were measured in.

The other stages drive load from Python, which on a 2-core machine takes CPU from the
service it measures. `wrk` (C, one thread) costs far less per request, so this stage gives
the service's own limit. TFG Podium and Heroic Labs Nakama were measured on the same kind of
machine (2 cores; server, Redis and load generator on the same cores) with
``wrk -t1 -c50 -d10s`` against a 20,000-member board, median of 3; this stage repeats that:

* fresh embedded servers; one board (window all-time) filled with 20,000 players first
  (``runs:batch`` of 1,000 runs), and the log consumer let catch up;
* for ``rankd serve --workers N``, N in 1 and 2, three loads, each
  ``wrk -t1 -c50 -d10s --latency`` three times: single-run submits (unique run ids, random
  players and scores: bench/wrk/submit.lua), one random player's rank (rank.lua) and the
  top 10 (top.lua). Figures: median req/s and median p99 of the three runs (wrk's latency
  distribution). Any non-2xx answer or socket error fails the stage;
* during each submit run a light thread polls /readyz once a second for the log consumer's
  lag (``oldest_unacked_seconds``, ``pending``, ``ack_pending``; the service refreshes it
  every 2 s): its worst value during the run and its value at the end are reported beside
  the rate, then the consumer is let catch up before the next run;
* ``--sustain 300``: then submits for 300 s more, with the worker count that submitted
  fastest, reporting the same lag each second: can the durable copy keep up at that rate?
* the CPU budget of each run: microseconds of CPU per request spent by the service's
  processes, Redis, NATS, PostgreSQL and wrk, from /proc (bench/cpu.py), and the machine's
  total beside it (on a shared machine, other work shows there);
* then the floors (bench/floor.py), each one process under the same wrk load: a bare ASGI
  app answering a fixed 200-byte body on uvicorn and on granian (ASGI and RSGI), the same
  plus one EVALSHA of the rank script (redis-py, coredis, valkey-glide) under rank.lua's
  requests, and plus one JetStream publish under submit.lua's; a summary prints each load's
  Rankd figures beside the goal and its floors.

``--quick``: 5 s runs (still median of 3; each floor once), submits and rank reads only, no
sustain. ``--no-floors`` skips the floors.
``--ab REF``: instead, a same-run A/B of the code at git REF (A) against the working tree
(B; ``--b REF2``: the code at REF2): ``--rounds`` rounds of A, B, B, A (a fresh
``rankd serve`` per slot, each load once), each side's median, B/A, and how far runs of
one side differ (the noise to beat);
``--a-env``/``--b-env`` set a service setting on one side only.
``--profile``: instead of measuring, record each load under py-spy (``rankd serve
--workers 1``) and write summaries to bench/results/profiles/ (see bench/pyspy_summary.py).
Skips with a message when wrk is not installed (Debian: ``apt-get install wrk``).

    python -m bench.wrk                   # full, about 5 minutes
    python -m bench.wrk --sustain 300     # plus the 5-minute backlog check
    python -m bench.wrk --quick           # about 3 minutes
    python -m bench.wrk --ab main --loads submit rank --workers 1 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from bench import cpu
from bench.common import (
    RESULTS,
    SERVER,
    SERVER_H,
    create_board,
    machine_line,
    servers,
    service_process,
    write_result,
)
from bench.floor import floor_process
from bench.reads import wait_for_aof_rewrite
from bench.submits import drain
from rankd.embedded import EmbeddedServers

SCRIPTS = Path(__file__).parent / "wrk"
BOARD = "wrk"
PLAYERS = 20_000
FILL_BATCH = 1000
THREADS, CONNECTIONS = 1, 50
REPEATS = 3
DRAIN_WITHIN_S = 300.0
LOADS = ("submit", "rank", "top10")
QUICK_LOADS = ("submit", "rank")
# The issue's goal and the Go peers' figures (same machine, same wrk shape): req/s, p99 ms.
GOALS = {"submit": (7100.0, 14.0), "rank": (12700.0, 9.0), "top10": (12700.0, 9.0)}
PODIUM = {"submit": (7122.0, 13.8), "rank": (12747.0, 9.1)}
NAKAMA = {"submit": (3637.0, 29.0), "rank": (2992.0, 37.0)}
LATENCY_LINE = re.compile(r"\s*(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)\s*")
PROFILE_RATE = 200  # samples/s
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


# --- the board --------------------------------------------------------------------------------


def fill_board(port: int) -> float:
    """Every one of PLAYERS players gets a run (batch submits); returns seconds."""
    started = time.perf_counter()
    rand = random.Random(20_000)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=SERVER_H, timeout=60) as c:
        for low in range(0, PLAYERS, FILL_BATCH):
            runs = [
                {"run_id": f"fill-{i}", "player_id": f"p{i}", "score": rand.randrange(10**9)}
                for i in range(low + 1, min(PLAYERS, low + FILL_BATCH) + 1)
            ]
            response = c.post(f"/v1/boards/{BOARD}/runs:batch", json={"runs": runs})
            response.raise_for_status()
            refused = [r for r in response.json()["results"] if "error" in r]
            if refused:
                raise RuntimeError(f"fill: {len(refused)} runs refused, e.g. {refused[0]}")
    return time.perf_counter() - started


def settle(stack: EmbeddedServers) -> float:
    """Let the log consumer catch up and Redis finish any AOF rewrite before a run; seconds
    the consumer needed (so one run's backlog does not load the next)."""
    drained = asyncio.run(drain(stack, DRAIN_WITHIN_S))
    if drained is None:
        raise RuntimeError(f"the log consumer did not catch up within {DRAIN_WITHIN_S:.0f} s")
    port = urlparse(stack.redis_url).port
    assert port is not None
    wait_for_aof_rewrite(port)
    return drained


# --- the measurement --------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def processes(stack: EmbeddedServers, service_pid: int) -> dict[str, list[int]]:
    """The process trees whose CPU a run is charged with (bench/cpu.py)."""
    return {
        "service": [service_pid],
        "redis": [stack.redis.pid] if stack.redis and stack.redis.pid else [],
        "nats": [stack.nats.pid] if stack.nats and stack.nats.pid else [],
        "postgres": [stack.postgres.pid] if stack.postgres and stack.postgres.pid else [],
    }


def one_run(
    stack: EmbeddedServers, port: int, load: str, prefix: str, seconds: int, service_pid: int
) -> WrkRun:
    """One wrk run of ``load`` (with the consumer's lag for submits) and its CPU budget."""
    procs = processes(stack, service_pid)
    if load == "submit":
        with LagPoller(port).running() as poller:
            run = run_wrk(load, port, seconds, prefix, procs)
        run.lag = poller.summary()
    else:
        run = run_wrk(load, port, seconds, prefix, procs)
    return run


def cpu_median(runs: Sequence[WrkRun]) -> dict[str, float]:
    """Each figure of the runs' CPU budgets, median of the runs."""
    budgets = [r.cpu for r in runs if r.cpu]
    if not budgets:
        return {}
    return {name: median([b[name] for b in budgets]) for name in budgets[0]}


def measure_load(
    stack: EmbeddedServers, port: int, load: str, workers: int, seconds: int, service_pid: int
) -> dict[str, Any]:
    runs: list[WrkRun] = []
    drains = []
    for i in range(REPEATS):
        drains.append(settle(stack))
        prefix = f"w{workers}r{i}t{time.time_ns()}"
        run = one_run(stack, port, load, prefix, seconds, service_pid)
        runs.append(run)
        lag = "" if run.lag is None else f", worst lag {run.lag.get('max_oldest_unacked_s')} s"
        print(
            f"  {load:6} workers={workers} run {i + 1}: {run.req_per_s:,.0f} req/s,"
            f" p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms{lag}",
            flush=True,
        )
        if run.cpu:
            print(f"         {cpu.budget_line(run.cpu)}", flush=True)
    result: dict[str, Any] = {
        "load": load,
        "workers": workers,
        "median_req_per_s": median([r.req_per_s for r in runs]),
        "median_p50_ms": median([r.p50_ms for r in runs]),
        "median_p99_ms": median([r.p99_ms for r in runs]),
        "cpu_us_per_request": cpu_median(runs),
        "runs": [asdict(r) for r in runs],
        "drain_before_s": drains,
    }
    if load == "submit":
        lags = [r.lag or {} for r in runs]
        result["max_oldest_unacked_s"] = max(x.get("max_oldest_unacked_s", 0.0) for x in lags)
        result["end_oldest_unacked_s"] = [x.get("end_oldest_unacked_s") for x in lags]
        result["drain_after_s"] = settle(stack)
    return result


def sustain(stack: EmbeddedServers, port: int, workers: int, seconds: int) -> dict[str, Any]:
    settle(stack)
    print(f"  sustain: submits for {seconds} s, workers={workers}", flush=True)
    with LagPoller(port).running() as poller:
        run = run_wrk("submit", port, seconds, f"s{workers}t{time.time_ns()}")
    lag = poller.summary(keep_series=True)
    drained = settle(stack)
    print(
        f"  sustain: {run.req_per_s:,.0f} req/s, p99 {run.p99_ms:.2f} ms, worst lag"
        f" {lag.get('max_oldest_unacked_s')} s, drained {drained} s after",
        flush=True,
    )
    return {
        "workers": workers,
        **asdict(run),  # its "seconds" is the time wrk measured
        "lag": lag,
        "drain_after_s": drained,
        "lag_under_1s": lag.get("max_oldest_unacked_s", float("inf")) < 1.0,
    }


# --- the floors -------------------------------------------------------------------------------

# (name, kind, server, client, the wrk load it runs under); see bench/floor.py
Floor = tuple[str, str, str, str, str]
HTTP_FLOORS: tuple[Floor, ...] = (
    ("bare ASGI on uvicorn", "http", "uvicorn", "-", "rank"),
    ("bare ASGI on granian", "http", "granian", "-", "rank"),
    ("bare RSGI on granian", "http", "granian-rsgi", "-", "rank"),
)
FLOORS: dict[str, tuple[Floor, ...]] = {
    "submit": (("bare JetStream publish, uvicorn", "publish", "uvicorn", "-", "submit"),),
    "rank": (
        ("bare EVALSHA, redis-py, uvicorn", "evalsha", "uvicorn", "redis-py", "rank"),
        ("bare EVALSHA, coredis, uvicorn", "evalsha", "uvicorn", "coredis", "rank"),
        ("bare EVALSHA, valkey-glide, uvicorn", "evalsha", "uvicorn", "glide", "rank"),
    ),
    "top10": (),
}


def measure_floor(
    stack: EmbeddedServers, floor: Floor, seconds: int, repeats: int
) -> dict[str, Any]:
    """One floor app under its wrk load, ``repeats`` times: median req/s and CPU budget, or
    why it could not run."""
    name, kind, server, client, load = floor
    result: dict[str, Any] = {"name": name, "kind": kind, "server": server, "client": client}
    result["load"] = load
    runs: list[WrkRun] = []
    try:
        with floor_process(stack, kind, server, client) as (port, process):
            for i in range(repeats):
                settle(stack)
                run = run_wrk(
                    load,
                    port,
                    seconds,
                    f"f{i}t{time.time_ns()}",
                    {
                        "service": [process.pid],
                        **{
                            k: v for k, v in processes(stack, process.pid).items() if k != "service"
                        },
                    },
                )
                runs.append(run)
    except Exception as exc:  # a client that does not install or work: say why, go on
        result["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        print(f"  floor {name}: could not run: {result['error']}", flush=True)
        return result
    result["median_req_per_s"] = median([r.req_per_s for r in runs])
    result["median_p99_ms"] = median([r.p99_ms for r in runs])
    result["cpu_us_per_request"] = cpu_median(runs)
    result["runs"] = [asdict(r) for r in runs]
    print(
        f"  floor {name} ({load} load): {result['median_req_per_s']:,.0f} req/s,"
        f" p99 {result['median_p99_ms']:.2f} ms",
        flush=True,
    )
    print(f"         {cpu.budget_line(result['cpu_us_per_request'])}", flush=True)
    return result


def floors_for(loads: Sequence[str]) -> list[Floor]:
    chosen = list(HTTP_FLOORS)
    for load in loads:
        chosen.extend(FLOORS[load])
    return chosen


def measure(
    loads: Sequence[str],
    workers: Sequence[int],
    seconds: int,
    sustain_s: int,
    extra_env: dict[str, str],
    floor_repeats: int = REPEATS,
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    sustained: dict[str, Any] | None = None
    fill_s: float | None = None
    floor_results: list[dict[str, Any]] = []
    with servers() as stack:
        for n in workers:
            with service_process(stack, n, extra_env) as (port, process):
                if fill_s is None:
                    create_board(port, BOARD, windows=["all-time"])
                    fill_s = round(fill_board(port), 2)
                    print(f"filled {PLAYERS:,} players in {fill_s} s", flush=True)
                for load in loads:
                    results.append(measure_load(stack, port, load, n, seconds, process.pid))
        if floor_repeats:
            for floor in floors_for(loads):
                floor_results.append(measure_floor(stack, floor, seconds, floor_repeats))
        if sustain_s:
            fastest = max(
                (r for r in results if r["load"] == "submit"),
                key=lambda r: float(r["median_req_per_s"]),
            )
            with service_process(stack, fastest["workers"], extra_env) as (port, _):
                sustained = sustain(stack, port, fastest["workers"], sustain_s)
    print_summary(loads, results, floor_results)
    return {
        "fill_seconds": fill_s,
        "results": results,
        "floors": floor_results,
        "sustain": sustained,
    }


def print_summary(
    loads: Sequence[str], results: Sequence[dict[str, Any]], floors: Sequence[dict[str, Any]]
) -> None:
    """Each load's Rankd figures beside the goal and the floors under the same wrk load."""
    print("\nsummary: median req/s (p99 ms); each floor is one process, as --workers 1")
    for load in loads:
        goal_rate, goal_p99 = GOALS[load]
        print(f"{load}: goal {goal_rate:,.0f} ({goal_p99:g})")
        best = 0.0
        for r in results:
            if r["load"] == load:
                best = max(best, float(r["median_req_per_s"])) if r["workers"] == 1 else best
                print(
                    f"  rankd --workers {r['workers']}: {r['median_req_per_s']:,.0f}"
                    f" ({r['median_p99_ms']:.1f}); {r['median_req_per_s'] / goal_rate:.2f} of"
                    f" the goal"
                )
        for f in floors:
            if f["load"] != load and f["kind"] != "http":
                continue
            if "error" in f:
                print(f"  floor {f['name']}: not measured ({f['error']})")
                continue
            share = (
                f"; rankd --workers 1 at {best / f['median_req_per_s']:.2f} of it" if best else ""
            )
            print(
                f"  floor {f['name']}: {f['median_req_per_s']:,.0f} ({f['median_p99_ms']:.1f})"
                f"{share}"
            )


# --- same-run A/B -----------------------------------------------------------------------------


@contextlib.contextmanager
def code_at(ref: str) -> Iterator[Path]:
    """The project's src/ as of git ``ref``, in a temporary directory (for PYTHONPATH: it
    comes before the editable install's path)."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="rankd-ab-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", ref, "src"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp) / "src"


def ab(
    ref: str,
    loads: Sequence[str],
    workers: int,
    seconds: int,
    rounds: int,
    a_env: dict[str, str],
    b_env: dict[str, str],
    b_ref: str | None = None,
) -> dict[str, Any]:
    """A (the code at ``ref``, with ``a_env``) against B (this tree, with ``b_env``), in ABBA
    order ``rounds`` times on the same servers: each slot a fresh service running each load
    once. Figures: each side's median, B/A, and the spread between runs of the same side
    (the noise a difference must beat)."""
    slots: list[dict[str, Any]] = []
    with code_at(ref) as a_src, contextlib.ExitStack() as trees, servers() as stack:
        envs = {"A": {**a_env, "PYTHONPATH": str(a_src)}, "B": b_env}
        if b_ref:
            b_src = trees.enter_context(code_at(b_ref))
            envs["B"] = {**b_env, "PYTHONPATH": str(b_src)}
        filled = False
        for r in range(rounds):
            for side in "ABBA":
                with service_process(stack, workers, envs[side]) as (port, process):
                    if not filled:
                        create_board(port, BOARD, windows=["all-time"])
                        fill_board(port)
                        filled = True
                    for load in loads:
                        settle(stack)
                        prefix = f"ab{r}{side}t{time.time_ns()}"
                        run = one_run(stack, port, load, prefix, seconds, process.pid)
                        slots.append({"round": r, "side": side, "load": load, **asdict(run)})
                        service_us = (run.cpu or {}).get("service", 0.0)
                        print(
                            f"  round {r + 1} {side} {load:6}: {run.req_per_s:,.0f} req/s,"
                            f" p99 {run.p99_ms:.2f} ms, service {service_us:,.0f} µs/request",
                            flush=True,
                        )
    summary: dict[str, Any] = {}
    b_name = b_ref or "this tree"
    print(f"\nA/B: A = {ref}, B = {b_name}; --workers {workers}; {rounds} ABBA rounds")
    for load in loads:
        rates = {
            s: [x["req_per_s"] for x in slots if x["load"] == load and x["side"] == s] for s in "AB"
        }
        service = {
            s: [
                (x["cpu"] or {}).get("service", 0.0)
                for x in slots
                if x["load"] == load and x["side"] == s
            ]
            for s in "AB"
        }
        a, b = statistics.median(rates["A"]), statistics.median(rates["B"])
        spread = max(max(v) / min(v) - 1 for v in rates.values())
        summary[load] = {
            "A_req_per_s": rates["A"],
            "B_req_per_s": rates["B"],
            "A_median": round(a, 1),
            "B_median": round(b, 1),
            "B_over_A": round(b / a, 3),
            "spread_within_side": round(spread, 3),
            "A_service_us": service["A"],
            "B_service_us": service["B"],
            "B_over_A_service_us": round(
                statistics.median(service["B"]) / max(1e-9, statistics.median(service["A"])), 3
            ),
        }
        print(
            f"  {load:6}: A {a:,.0f} req/s, B {b:,.0f} req/s: B/A {b / a:.3f} (runs of one side"
            f" differ by up to {spread:.1%}); service CPU per request B/A"
            f" {summary[load]['B_over_A_service_us']:.3f}"
        )
    return {
        "ref": ref,
        "b_ref": b_name,
        "workers": workers,
        "rounds": rounds,
        "a_env": a_env,
        "b_env": b_env,
        "summary": summary,
        "slots": slots,
    }


# --- profiles ---------------------------------------------------------------------------------


def profile(
    loads: Sequence[str],
    seconds: int,
    out: Path,
    extra_env: dict[str, str],
    raw_dir: Path | None = None,
) -> None:
    """Each load under py-spy against ``rankd serve --workers 1``; summaries into ``out``
    (and the collapsed stacks, for flame graphs, into ``raw_dir``)."""
    from bench.pyspy_summary import summarize

    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    out.mkdir(parents=True, exist_ok=True)
    with (
        servers() as stack,
        service_process(stack, 1, extra_env) as (port, process),
        tempfile.TemporaryDirectory(prefix="rankd-pyspy-") as tmp,
    ):
        create_board(port, BOARD, windows=["all-time"])
        fill_board(port)
        for load in loads:
            settle(stack)
            raw = Path(tmp) / f"{load}.txt"
            # sampling starts a moment after wrk and stops before it, so only load is seen;
            # --nonblocking: pausing the service for each sample would slow what is measured
            record = ["record", "--pid", str(process.pid), "--format", "raw", "--nolineno"]
            record += ["--nonblocking", "--rate", str(PROFILE_RATE)]
            record += ["--duration", str(seconds - 2), "-o", str(raw)]
            spy = subprocess.Popen(
                [py_spy, *record], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            run = run_wrk(load, port, seconds, f"prof{time.time_ns()}")
            _, err = spy.communicate(timeout=60)
            if spy.returncode != 0:
                raise RuntimeError(f"py-spy failed: {err.decode()}")
            shape = " ".join(wrk_command(load, port, seconds, "-")[:5])
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            title = (
                f"{load}: rankd serve --workers 1 under `{shape}` ({run.req_per_s:,.0f} req/s,"
                f" p99 {run.p99_ms:.2f} ms while sampled); py-spy {' '.join(record[3:-4])},"
                f" {when}"
            )
            (out / f"{load}.txt").write_text(summarize(raw.read_text(), title))
            if raw_dir is not None:
                raw_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(raw, raw_dir / f"{load}.collapsed.txt")
            print(f"wrote {out / f'{load}.txt'} ({run.req_per_s:,.0f} req/s while sampled)")


# --- the command ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 s runs, submits and rank only")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--loads", nargs="+", choices=LOADS, help="default: all (quick: 2)")
    parser.add_argument("--seconds", type=int, help="per wrk run (default 10; quick 5)")
    parser.add_argument(
        "--sustain", type=int, default=0, metavar="S", help="then submit for S seconds"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="service setting, e.g. RANKD_RATE_KEY_PER_S=0 (repeatable)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="py-spy summaries instead of figures"
    )
    parser.add_argument(
        "--profile-raw", type=Path, metavar="DIR", help="with --profile: keep the stacks here"
    )
    parser.add_argument("--no-floors", action="store_true", help="skip the floor apps")
    parser.add_argument(
        "--ab",
        metavar="REF",
        help="instead: A/B the code at git REF (A) against this tree (B), ABBA order",
    )
    parser.add_argument("--rounds", type=int, default=2, help="with --ab: ABBA rounds")
    parser.add_argument("--b", metavar="REF", help="with --ab: B is the code at git REF")
    parser.add_argument(
        "--a-env", action="append", default=[], metavar="KEY=VALUE", help="with --ab: A only"
    )
    parser.add_argument(
        "--b-env", action="append", default=[], metavar="KEY=VALUE", help="with --ab: B only"
    )
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench.wrk: skipped, `wrk` is not installed (Debian: apt-get install wrk)")
        return
    extra_env = dict(item.split("=", 1) for item in args.env)
    loads = args.loads or (QUICK_LOADS if args.quick else LOADS)
    seconds = args.seconds or (5 if args.quick else 10)
    if args.profile:
        profile(loads, max(seconds, 10), RESULTS / "profiles", extra_env, args.profile_raw)
        return
    load_before = os.getloadavg()
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python -m bench.wrk", *given])
    if args.ab:
        print(f"bench.wrk A/B on {machine_line()}; load average {load_before}")
        a_env = {**extra_env, **dict(item.split("=", 1) for item in args.a_env)}
        b_env = {**extra_env, **dict(item.split("=", 1) for item in args.b_env)}
        found = ab(args.ab, loads, args.workers[0], seconds, args.rounds, a_env, b_env, args.b)
        write_result(
            "wrk_ab",
            {
                "command": command,
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                **found,
            },
        )
        return
    print(f"bench.wrk on {machine_line()}; loads {', '.join(loads)}; workers {args.workers}")
    # --quick: each floor once (they are steadier than the service, and the stage stays short)
    floor_repeats = 0 if args.no_floors else 1 if args.quick else REPEATS
    measured = measure(loads, args.workers, seconds, args.sustain, extra_env, floor_repeats)
    write_result(
        "wrk",
        {
            "command": command,
            "quick": args.quick,
            "board": {"members": PLAYERS, "windows": ["all-time"]},
            "wrk": {
                "threads": THREADS,
                "connections": CONNECTIONS,
                "seconds": seconds,
                "repeats": REPEATS,
                "version": wrk_version(),
            },
            "service_env": extra_env,
            "goals": GOALS,
            "podium": PODIUM,
            "nakama": NAKAMA,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            **measured,
        },
    )


def wrk_version() -> str:
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    return (done.stdout + done.stderr).splitlines()[0].strip() if done.stdout or done.stderr else ""


if __name__ == "__main__":
    main()
