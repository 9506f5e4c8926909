"""The measurement of ``python -m bench.wrk`` (bench/wrk.py): the board, each load's runs
under wrk with their CPU budgets, the sustained submits, the floors and the summary.

The board is filled once (20,000 players) and the log consumer let catch up before each
run; the floor apps themselves are in bench/floor.py, wrk's runs in bench/wrk_runs.py.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any
from urllib.parse import urlparse

import httpx

from bench import cpu
from bench.common import SERVER_H, create_board, servers, service_process
from bench.floor import floor_process
from bench.reads_data import wait_for_aof_rewrite
from bench.submits_measure import drain
from bench.wrk_runs import BOARD, PLAYERS, LagPoller, WrkRun, run_wrk
from rankd.embedded import EmbeddedServers

FILL_BATCH = 1000
REPEATS = 3
DRAIN_WITHIN_S = 300.0
# The issue's goal and the Go peers' figures (same machine, same wrk shape): req/s, p99 ms.
GOALS = {"submit": (7100.0, 14.0), "rank": (12700.0, 9.0), "top10": (12700.0, 9.0)}
PODIUM = {"submit": (7122.0, 13.8), "rank": (12747.0, 9.1)}
NAKAMA = {"submit": (3637.0, 29.0), "rank": (2992.0, 37.0)}


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
