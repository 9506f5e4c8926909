"""The same-run A/B of ``python -m bench.wrk --ab REF`` (bench/wrk.py): the code at a git
ref against this tree (or another ref), in ABBA order on the same servers.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.common import create_board, servers, service_process
from bench.wrk_measure import fill_board, one_run, settle
from bench.wrk_runs import BOARD


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
