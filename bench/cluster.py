"""Single Redis beside Redis Cluster (and Sentinel) under `wrk`, in one run: what the
cluster costs or buys on one machine, and what reads from replicas change.

The same load as ``python -m bench.wrk`` (its helpers: a 20,000-player all-time board
filled first, ``wrk -t1 -c50 -d10s --latency``, median of 3, no non-2xx allowed), on
``rankd serve --workers 2`` over each embedded topology. Every tree and service is started
first and they all stay up, so the runs can alternate between them: for each load, the
variants in order, then in reverse, then in order again (A B C C B A A B C), so each sees
the same minutes of a shared, noisy machine:

* ``single``: one Redis, one NATS (stream at 1 replica), one PostgreSQL;
* ``cluster``: three Redis primaries with a replica each, three NATS (stream at 3
  replicas, ``RANKD_STREAM_REPLICAS=3``), one PostgreSQL; two services on it, the second
  with ``RANKD_REDIS_READ_FROM_REPLICAS=true`` (variant ``replicas``);
* ``sentinel`` (``--topologies ... sentinel``): a primary, its replica and three Sentinels,
  the same NATS; the same two services.

Loads: single-run submits (bench/wrk/submit.lua) and one random player's rank (rank.lua).
Between runs the log consumer is let catch up. Writes bench/results/cluster.json.

    python -m bench.cluster                          # single and cluster, about 6 minutes
    python -m bench.cluster --topologies single cluster sentinel
    python -m bench.cluster --quick                  # 5 s runs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from bench.common import create_board, machine_line, servers, service_process, write_result
from bench.submits_measure import drain
from bench.wrk_measure import REPEATS, fill_board, median
from bench.wrk_runs import (
    BOARD,
    CONNECTIONS,
    PLAYERS,
    THREADS,
    LagPoller,
    WrkRun,
    run_wrk,
    wrk_version,
)
from rankd.embedded import EmbeddedServers
from rankd.embedded.topology import start_topology

WORKERS = 2
DRAIN_WITHIN_S = 300.0
TOPOLOGIES = ("single", "cluster", "sentinel")
REPLICAS_ENV = {"RANKD_REDIS_READ_FROM_REPLICAS": "true"}
READY_S = 300.0  # a loaded machine starts ten processes slowly


@contextlib.contextmanager
def tree(topology: str) -> Iterator[EmbeddedServers]:
    """Fresh embedded servers of ``topology`` (same face as EmbeddedServers)."""
    if topology == "single":
        with servers() as stack:
            yield stack
        return
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        started = start_topology(Path(tmp) / "data", topology)  # type: ignore[arg-type]
        try:
            yield cast(EmbeddedServers, started)
        finally:
            started.stop()


def settle(stack: EmbeddedServers) -> float:
    drained = asyncio.run(drain(stack, DRAIN_WITHIN_S))
    if drained is None:
        raise RuntimeError(f"the log consumer did not catch up within {DRAIN_WITHIN_S:.0f} s")
    return drained


def one_run(stack: EmbeddedServers, port: int, load: str, seconds: int, label: str) -> WrkRun:
    settle(stack)
    prefix = f"{label.replace('/', '-')}t{time.time_ns()}"  # run ids take no slash
    if load == "submit":
        with LagPoller(port).running() as poller:
            run = run_wrk(load, port, seconds, prefix)
        run.lag = poller.summary()
    else:
        run = run_wrk(load, port, seconds, prefix)
    lag = "" if run.lag is None else f", worst lag {run.lag.get('max_oldest_unacked_s')} s"
    print(
        f"  {label:18} {load:6}: {run.req_per_s:,.0f} req/s, p50 {run.p50_ms:.2f} ms,"
        f" p99 {run.p99_ms:.2f} ms{lag}",
        flush=True,
    )
    return run


def summary(topology: str, variant: str, load: str, runs: list[WrkRun]) -> dict[str, Any]:
    return {
        "topology": topology,
        "reads": variant,
        "load": load,
        "workers": WORKERS,
        "median_req_per_s": median([r.req_per_s for r in runs]),
        "median_p50_ms": median([r.p50_ms for r in runs]),
        "median_p99_ms": median([r.p99_ms for r in runs]),
        "runs": [asdict(r) for r in runs],
    }


def measure(topologies: Sequence[str], loads: Sequence[str], seconds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with contextlib.ExitStack() as up:
        targets: list[tuple[str, str, EmbeddedServers, int]] = []
        for topology in topologies:
            print(f"{topology}: starting the tree", flush=True)
            stack = up.enter_context(tree(topology))
            base = {} if topology == "single" else {"RANKD_STREAM_REPLICAS": "3"}
            port, _ = up.enter_context(service_process(stack, WORKERS, base, READY_S))
            create_board(port, BOARD, windows=["all-time"])
            print(f"{topology}: filled {PLAYERS:,} players in {fill_board(port):.1f} s")
            targets.append((topology, "primary", stack, port))
            if topology != "single":
                env = {**base, **REPLICAS_ENV}
                replica_port, _ = up.enter_context(service_process(stack, WORKERS, env, READY_S))
                targets.append((topology, "replicas", stack, replica_port))
        for load in loads:
            runs: dict[int, list[WrkRun]] = {i: [] for i in range(len(targets))}
            order = list(range(len(targets)))
            for repeat in range(REPEATS):
                for i in order if repeat % 2 == 0 else reversed(order):
                    topology, variant, stack, port = targets[i]
                    label = f"{topology}/{variant}"
                    runs[i].append(one_run(stack, port, load, seconds, label))
            for i, (topology, variant, _, _) in enumerate(targets):
                out.append(summary(topology, variant, load, runs[i]))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topologies", nargs="+", choices=TOPOLOGIES, default=TOPOLOGIES[:2])
    parser.add_argument("--loads", nargs="+", choices=("submit", "rank"))
    parser.add_argument("--quick", action="store_true", help="5 s runs")
    parser.add_argument("--seconds", type=int, help="per wrk run (default 10; quick 5)")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench.cluster: skipped, `wrk` is not installed (Debian: apt-get install wrk)")
        return
    loads = args.loads or ["submit", "rank"]
    seconds = args.seconds or (5 if args.quick else 10)
    print(f"bench.cluster on {machine_line()}; topologies {args.topologies}; loads {loads}")
    loadavg: dict[str, list[float]] = {"before": [round(x, 2) for x in os.getloadavg()]}
    results = measure(args.topologies, loads, seconds)
    loadavg["after"] = [round(x, 2) for x in os.getloadavg()]
    print("\nmedian of 3, rankd serve --workers 2:")
    for r in results:
        print(
            f"  {r['topology']:8} {r['reads']:8} {r['load']:6}: {r['median_req_per_s']:>8,.0f}"
            f" req/s, p99 {r['median_p99_ms']:.2f} ms"
        )
    given = sys.argv[1:] if argv is None else list(argv)
    write_result(
        "cluster",
        {
            "command": " ".join(["python -m bench.cluster", *given]),
            "board": {"members": PLAYERS, "windows": ["all-time"]},
            "wrk": {
                "threads": THREADS,
                "connections": CONNECTIONS,
                "seconds": seconds,
                "repeats": REPEATS,
                "version": wrk_version(),
            },
            "workers": WORKERS,
            "loadavg": loadavg,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
