"""The write-behind alone: how fast the log's runs are applied, and where the time goes.

On fresh embedded servers, a board with the ``all-time`` and ``weekly`` windows (the seeds'
peak shape: each run on two boards' worth of standings) gets ``--messages`` log messages of
``--runs`` runs each (as ``runs:batch`` logs them: random players among ``--players``),
published straight to the log. Then the applier the log consumer runs (the same code as
``rankd replay``: decode, plan, the Redis scripts, the PostgreSQL batch, the marks) applies
them all, timed, under cProfile; the profile's heaviest functions by their own time and by
cumulative time are printed, with the share of the wall time spent waiting on each store
(the event loop's select) apart from Python's own work.

    python -m bench.write_behind --messages 200 --runs 500
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import random
import sys
import time

from bench.common import embedded_settings, machine_line, write_result
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.settings import Settings

BOARD = "wb"


async def fill(settings: Settings, messages: int, runs: int, players: int) -> int:
    """Publish the messages; returns the first one's sequence."""
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    try:
        await runtime.boards.put(BOARD, {"windows": ["all-time", "weekly"]})
        first = await runtime.runlog.last_sequence() + 1
        rng = random.Random(3)
        now = int(time.time() * 1000)
        for m in range(messages):
            batch = [
                Run(f"m{m}-{i}", f"p{rng.randrange(players)}", rng.randrange(10**9), now, now)
                for i in range(runs)
            ]
            await runtime.runlog.publish(BOARD, encode_message(BOARD, batch), f"m{m}")
        return first
    finally:
        await runtime.close()


async def apply(settings: Settings, first: int) -> tuple[float, int, pstats.Stats]:
    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    profile = cProfile.Profile()
    try:
        started = time.perf_counter()
        profile.enable()
        report = await replay(runtime.runlog, runtime.applier, first)
        profile.disable()
        seconds = time.perf_counter() - started
    finally:
        await runtime.close()
    return seconds, report.messages, pstats.Stats(profile)


def top(stats: pstats.Stats, key: str, n: int) -> str:
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats(key).print_stats(n)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start : start + n + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(f"machine: {machine_line()}")
    with embedded_settings() as settings:
        first = asyncio.run(fill(settings, args.messages, args.runs, args.players))
        seconds, messages, stats = asyncio.run(apply(settings, first))
    runs = messages * args.runs
    waiting = sum(
        tt
        for (file, _, name), (_, _, tt, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if "select.epoll" in name  # the event loop waiting on sockets
    )
    print(
        f"applied {runs:,} runs ({messages} messages) in {seconds:.2f}s: {runs / seconds:,.0f}"
        f" runs/s under cProfile; the loop waited on the stores {waiting:.2f}s"
        f" ({waiting / seconds:.0%}), Python's own work the rest"
    )
    print("\nby own time:\n" + top(stats, "tottime", args.top))
    print("\nby cumulative time:\n" + top(stats, "cumulative", args.top))
    write_result(
        "write_behind",
        {
            "command": " ".join(["python -m bench.write_behind", *sys.argv[1:]]),
            "runs": runs,
            "seconds": round(seconds, 2),
            "runs_per_s_profiled": round(runs / seconds),
            "loop_waiting_s": round(waiting, 2),
        },
    )


if __name__ == "__main__":
    main()
