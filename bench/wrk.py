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

``--quick``: 5 s runs (still median of 3), submits and rank reads only, no sustain.
``--profile``: instead of measuring, record each load under py-spy (``rankd serve
--workers 1``) and write summaries to bench/results/profiles/ (see bench/pyspy_summary.py).
Skips with a message when wrk is not installed (Debian: ``apt-get install wrk``).

    python -m bench.wrk                   # full, about 5 minutes
    python -m bench.wrk --sustain 300     # plus the 5-minute backlog check
    python -m bench.wrk --quick           # about 2 minutes
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
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

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


def run_wrk(load: str, port: int, seconds: int, prefix: str) -> WrkRun:
    command = wrk_command(load, port, seconds, prefix)
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    run = parse_wrk(done.stdout)
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


def measure_load(
    stack: EmbeddedServers, port: int, load: str, workers: int, seconds: int
) -> dict[str, Any]:
    runs: list[WrkRun] = []
    drains = []
    for i in range(REPEATS):
        drains.append(settle(stack))
        prefix = f"w{workers}r{i}t{time.time_ns()}"
        if load == "submit":
            with LagPoller(port).running() as poller:
                run = run_wrk(load, port, seconds, prefix)
            run.lag = poller.summary()
        else:
            run = run_wrk(load, port, seconds, prefix)
        runs.append(run)
        lag = "" if run.lag is None else f", worst lag {run.lag.get('max_oldest_unacked_s')} s"
        print(
            f"  {load:6} workers={workers} run {i + 1}: {run.req_per_s:,.0f} req/s,"
            f" p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms{lag}",
            flush=True,
        )
    result: dict[str, Any] = {
        "load": load,
        "workers": workers,
        "median_req_per_s": median([r.req_per_s for r in runs]),
        "median_p50_ms": median([r.p50_ms for r in runs]),
        "median_p99_ms": median([r.p99_ms for r in runs]),
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


def measure(
    loads: Sequence[str],
    workers: Sequence[int],
    seconds: int,
    sustain_s: int,
    extra_env: dict[str, str],
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    sustained: dict[str, Any] | None = None
    fill_s: float | None = None
    with servers() as stack:
        for n in workers:
            with service_process(stack, n, extra_env) as (port, _):
                if fill_s is None:
                    create_board(port, BOARD, windows=["all-time"])
                    fill_s = round(fill_board(port), 2)
                    print(f"filled {PLAYERS:,} players in {fill_s} s", flush=True)
                for load in loads:
                    results.append(measure_load(stack, port, load, n, seconds))
        if sustain_s:
            fastest = max(
                (r for r in results if r["load"] == "submit"),
                key=lambda r: float(r["median_req_per_s"]),
            )
            with service_process(stack, fastest["workers"], extra_env) as (port, _):
                sustained = sustain(stack, port, fastest["workers"], sustain_s)
    return {"fill_seconds": fill_s, "results": results, "sustain": sustained}


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
    print(f"bench.wrk on {machine_line()}; loads {', '.join(loads)}; workers {args.workers}")
    measured = measure(loads, args.workers, seconds, args.sustain, extra_env)
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python -m bench.wrk", *given])
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
