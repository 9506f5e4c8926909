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

This module is the command; the parts are bench/wrk_runs.py (running wrk, reading its
output, the consumer's lag), bench/wrk_measure.py (the board, the runs, the floors, the
summary), bench/wrk_ab.py (``--ab``) and bench/wrk_profile.py (``--profile``).

    python -m bench.wrk                   # full, about 5 minutes
    python -m bench.wrk --sustain 300     # plus the 5-minute backlog check
    python -m bench.wrk --quick           # about 3 minutes
    python -m bench.wrk --ab main --loads submit rank --workers 1 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.common import RESULTS, machine_line, write_result
from bench.wrk_ab import ab
from bench.wrk_measure import GOALS, NAKAMA, PODIUM, REPEATS, measure
from bench.wrk_profile import profile
from bench.wrk_runs import CONNECTIONS, PLAYERS, THREADS, wrk_version

LOADS = ("submit", "rank", "top10")
QUICK_LOADS = ("submit", "rank")


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


if __name__ == "__main__":
    main()
