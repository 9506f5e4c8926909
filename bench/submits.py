"""Submits: single-run latency at fixed offered rates, batch throughput, the raw script's
limit beside them, and what durability costs (issue 4, measurements 1 and 6).

On fresh embedded servers and one `rankd serve`, with a board of windows all-time, daily and
weekly, random players among 100k and unique run ids:

* the baseline first, while the service is idle: the same Lua script (``submit_best`` by
  EVALSHA, the calls ``plan()`` makes, one per window) sent straight to the same Redis from
  a lean pipelined client (hiredis parser, prepared RESP): the physical limit, in script
  calls/s and runs/s (a run is three calls);
* single-run ``POST /v1/boards/{b}/runs`` at fixed offered rates (open loop, latency from the
  scheduled start, one request per keep-alive connection at a time, up to 256 connections):
  p50/p99 per rate and the highest rate sustained with p99 <= 10 ms;
* single-run throughput from 32 closed-loop connections;
* ``POST .../runs:batch`` of 1000 runs from a few closed-loop clients: runs/s, and runs/s
  including the time the log consumer then needs to apply them again (drain);
* durability: the same single-run and batch throughput on a second set of fresh servers
  whose JetStream fsyncs every two minutes (its default) instead of on every write.

Both sets of servers run side by side; the throughput rounds alternate between them (and
the baseline is taken again each round), and the figures are medians over rounds, since
this machine is shared and noisy. Between phases the log consumer is let catch up, so one
phase's backlog does not load the next. Writes bench/results/submits.json and prints a
summary.

    python -m bench.submits            # full, about 4 minutes
    python -m bench.submits --quick    # well under a minute
"""

# This module is the command (main) and its summary; the parts are bench/submits_base.py
# (board, targets, profiles), bench/submits_load.py (the HTTP load), bench/submits_baseline.py
# (the script straight to Redis) and bench/submits_measure.py (the drain, the two stacks, the
# phases).

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench.common import machine_line, write_result
from bench.submits_base import (
    BATCH_CLIENTS,
    BATCH_SIZE,
    FULL,
    MAX_SCORE,
    P99_LIMIT_MS,
    PLAYERS,
    QUICK,
    SINGLE_CONCURRENCY,
    TARGET_BATCH_RUNS_PER_S,
    TARGET_SINGLE_RATE,
    WINDOWS,
    new_runner,
    say,
)
from bench.submits_measure import Stack, measure, median_of


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def summary(result: dict[str, Any]) -> str:
    single, batch, base = result["single"], result["batch"], result["baseline"]
    dur = result["durability"]
    lines = [f"machine: {machine_line()}", f"command: {result['command']}"]
    lines.append("single-run submits (open loop, latency from the scheduled start):")
    for s in single["steps"]:
        lines.append(
            f"  offered {s['offered_per_s']:>6,.0f}/s  achieved {s['achieved_per_s']:>8,.1f}/s"
            f"  p50 {s['p50_ms']:>8.2f} ms  p99 {s['p99_ms']:>8.2f} ms  errors {s['errors']}"
        )
    lines.append(
        f"  highest sustained with p99 <= {P99_LIMIT_MS:g} ms: "
        f"{single['highest_sustained_per_s']:,.0f}/s;"
        f" p99 at 1000/s: {single['at_1000_per_s']['p99_ms']:.2f} ms"
    )
    lines.append(
        f"single-run throughput, {SINGLE_CONCURRENCY} connections: "
        f"{result['single_closed']['runs_per_s']:,.0f} runs/s (median of {result['rounds']})"
    )
    incl = batch["runs_per_s_incl_drain"]
    lines.append(
        f"batch submits: {batch['runs_per_s']:,.0f} runs/s"
        f" ({'n/a' if incl is None else f'{incl:,.0f}'} incl. the consumer's catch-up);"
        f" median of {result['rounds']}"
    )
    lines.append(
        f"baseline submit_best EVALSHA pipelined: {base['script_calls_per_s']:,.0f} calls/s"
        f" = {base['runs_per_s']:,.0f} runs/s; batch / baseline = {result['batch_vs_baseline']}"
    )
    for mode in ("always", "2m"):
        d = dur[mode]
        lines.append(
            f"durability, sync {mode:>6}: single {d['single_runs_per_s']:>8,.0f} runs/s,"
            f" batch {d['batch_runs_per_s']:>9,.0f} runs/s"
        )
    lines.append(
        f"  always / 2m: single {dur['single_always_vs_interval']},"
        f" batch {dur['batch_always_vs_interval']}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short runs, short rate ladder")
    parser.add_argument("--workers", type=int, default=1, help="rankd serve --workers")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    command = " ".join(["python -m bench.submits", *sys.argv[1:]])
    say(f"machine: {machine_line()}")
    started = time.perf_counter()
    with new_runner() as runner:
        measured = measure(runner, profile, args.workers)
    single, baselines = measured["single"], measured["baselines"]
    durable: Stack = measured["durable"]
    interval: Stack = measured["interval"]

    def throughput(stack: Stack) -> dict[str, Any]:
        return {
            "nats_sync": stack.sync,
            "single_runs_per_s": median_of(stack.single, "runs_per_s"),
            "batch_runs_per_s": median_of(stack.batch, "runs_per_s"),
            "batch_runs_per_s_incl_drain": median_of(stack.batch, "runs_per_s_incl_drain"),
            "single_rounds": stack.single,
            "batch_rounds": stack.batch,
        }

    always, every_2m = throughput(durable), throughput(interval)
    baseline = {
        **{k: v for k, v in baselines[0].items() if k not in ("seconds", "script_calls")},
        "script_calls_per_s": median_of(baselines, "script_calls_per_s"),
        "runs_per_s": median_of(baselines, "runs_per_s"),
        "rounds": baselines,
    }
    batch = {
        "runs_per_batch": BATCH_SIZE,
        "clients": BATCH_CLIENTS,
        "seconds_each": profile.batch_s,
        "runs_per_s": always["batch_runs_per_s"],
        "runs_per_s_incl_drain": always["batch_runs_per_s_incl_drain"],
        "batch_p50_ms": median_of(durable.batch, "batch_p50_ms"),
        "batch_p99_ms": median_of(durable.batch, "batch_p99_ms"),
        "errors": sum(b["errors"] for b in durable.batch),
        "rounds": durable.batch,
    }
    single_closed = {
        "concurrency": SINGLE_CONCURRENCY,
        "seconds_each": profile.closed_s,
        "runs_per_s": always["single_runs_per_s"],
        "p50_ms": median_of(durable.single, "p50_ms"),
        "p99_ms": median_of(durable.single, "p99_ms"),
        "errors": sum(s["errors"] for s in durable.single),
        "rounds": durable.single,
    }
    per_round = [
        ratio(b["runs_per_s"], base["runs_per_s"])
        for b, base in zip(durable.batch, baselines, strict=False)
    ]
    at_1000 = single["at_1000_per_s"]
    result: dict[str, Any] = {
        "command": command,
        "quick": args.quick,
        "workers": args.workers,
        "rounds": profile.rounds,
        "board": {"windows": list(WINDOWS), "players": PLAYERS, "max_score": MAX_SCORE},
        "single": single,
        "single_closed": single_closed,
        "batch": batch,
        "baseline": baseline,
        "batch_vs_baseline": ratio(batch["runs_per_s"], baseline["runs_per_s"]),
        "batch_vs_baseline_per_round": per_round,
        "durability": {
            "always": always,
            "2m": every_2m,
            "single_always_vs_interval": ratio(
                always["single_runs_per_s"], every_2m["single_runs_per_s"]
            ),
            "batch_always_vs_interval": ratio(
                always["batch_runs_per_s"], every_2m["batch_runs_per_s"]
            ),
        },
        "drains": {"always": durable.drains, "2m": interval.drains},
        "targets": {
            "batch_runs_per_s": {
                "target": f">= {TARGET_BATCH_RUNS_PER_S}",
                "measured": batch["runs_per_s"],
                "met": (batch["runs_per_s"] or 0) >= TARGET_BATCH_RUNS_PER_S,
            },
            "single_p99_ms_at_1000_per_s": {
                "target": f"<= {P99_LIMIT_MS:g}",
                "measured": at_1000["p99_ms"],
                "met": at_1000["p99_ms"] <= P99_LIMIT_MS
                and at_1000["errors"] == 0
                and at_1000["achieved_per_s"] >= 0.95 * TARGET_SINGLE_RATE,
            },
        },
        "elapsed_seconds": round(time.perf_counter() - started, 1),
    }
    write_result("submits", result)
    print(summary(result))


if __name__ == "__main__":
    main()
