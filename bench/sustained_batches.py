"""Sustained batch submits measured from outside, until the durable copy has caught up.

Issue 29's shape: for ``--seconds`` (60), ``wrk`` sends ``runs:batch`` requests of ``--runs``
(500) runs from ``--connections`` (16) connections to ``rankd serve --workers`` (2) on
fresh embedded servers, one board with the ``all-time`` and ``weekly`` windows, random
players among ``--players``. Then the log consumer is let drain. Figures: acknowledged
runs/s while sending, and end to end: acknowledged runs / (sending time + drain time), the
rate the whole system (service, log, Redis, the PostgreSQL copy) sustains; beside them the
CPU each process spent per run (bench/cpu.py) and how busy both cores were. Any non-2xx
answer fails the run (a refused batch is not a served one).

    python -m bench.sustained_batches                 # the issue's shape, about 2 minutes
    python -m bench.sustained_batches --seconds 20    # a quicker look
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from redis import Redis as SyncRedis

from bench import cpu
from bench.common import SERVER, create_board, machine_line, servers, service_process, write_result
from bench.wrk_measure import processes, settle
from bench.wrk_runs import parse_wrk

SCRIPT = Path(__file__).parent / "wrk" / "batch.lua"
BOARD = "sustained"
GOAL_RUNS_PER_S = 17_400  # the seeds' peak, end to end


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with servers() as stack, service_process(stack, args.workers) as (port, process):
        create_board(port, BOARD, windows=["all-time", "weekly"])
        procs = processes(stack, process.pid)
        command = [
            *("wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "--latency"),
            *("--timeout", "30s", "-s", str(SCRIPT), f"http://127.0.0.1:{port}"),
            *("--", BOARD, str(args.players), SERVER, f"b{time.time_ns()}", str(args.runs)),
        ]
        redis = SyncRedis.from_url(stack.redis_url)
        before, redis_before = (
            cpu.snapshot(procs),
            cpu.redis_busy_of(redis.info("cpu"), redis.info("commandstats")),
        )
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.seconds + 90)
        sending_s = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"wrk failed:\n{done.stdout}{done.stderr}")
        run = parse_wrk(done.stdout)
        if run.non_2xx or any(run.socket_errors.values()):
            raise RuntimeError(f"{run.non_2xx} non-2xx, socket errors {run.socket_errors}")
        drain_s = settle(stack)
        after = cpu.snapshot(procs)
        commands = cpu.redis_busy_between(
            redis_before, cpu.redis_busy_of(redis.info("cpu"), redis.info("commandstats"))
        )
        redis.close()
    acked = run.requests * args.runs
    spent = cpu.budget(before, after, acked, sending_s + drain_s)
    return {
        "workers": args.workers,
        "connections": args.connections,
        "runs_per_request": args.runs,
        "sending_s": round(sending_s, 2),
        "drain_s": round(drain_s, 2),
        "acknowledged_runs": acked,
        "acknowledged_runs_per_s": round(acked / sending_s),
        "end_to_end_runs_per_s": round(acked / (sending_s + drain_s)),
        "request_p50_ms": run.p50_ms,
        "request_p99_ms": run.p99_ms,
        "cpu_us_per_run": {k: v for k, v in spent.items() if k != "wrk"},
        # Redis's own CPU (its main process) and each command's execution, per run
        "redis_us_per_run": {k: round(v * 1e6 / acked, 1) for k, v in commands.items()},
        "goal_end_to_end_runs_per_s": GOAL_RUNS_PER_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--runs", type=int, default=500, help="runs per request")
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install wrk); nothing measured")
        return
    print(f"machine: {machine_line()}")
    result = measure(args)
    print(
        f"{result['acknowledged_runs']:,} runs acknowledged in {result['sending_s']} s"
        f" ({result['acknowledged_runs_per_s']:,}/s), drained {result['drain_s']} s later:"
        f" {result['end_to_end_runs_per_s']:,} runs/s end to end (goal {GOAL_RUNS_PER_S:,});"
        f" request p99 {result['request_p99_ms']} ms"
    )
    print(f"CPU us per run: {result['cpu_us_per_run']}")
    print(f"Redis us per run, by command: {result['redis_us_per_run']}")
    write_result(
        "sustained_batches",
        {"command": " ".join(["python -m bench.sustained_batches", *sys.argv[1:]]), **result},
    )


if __name__ == "__main__":
    main()
