"""Segment fan-out: batch submits to a board with 2 segment dimensions and 4 windows (12
script calls a run) beside the same board without segments (4 calls a run), same run.

Closed-loop ``runs:batch`` of 1,000 runs from two clients against `rankd serve`, the two
boards alternating in rounds so the machine's drift hits both alike; the figure to quote is
the median ratio of the rounds.

    python -m bench.segments [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

import orjson

from bench.common import SERVER_H, create_board, machine_line, servers, service, write_result
from bench.rawhttp import Connection

WINDOWS = ["all-time", "daily", "weekly", "monthly"]
BATCH = 1000
CLIENTS = 2
COUNTRIES = [f"C{i:02d}" for i in range(40)]
PLATFORMS = ["pc", "console", "mobile"]


async def batches(port: int, board: str, seconds: float, tag: str, segmented: bool) -> float:
    """Runs per second of closed-loop batches to ``board`` for ``seconds``."""
    rand = random.Random(tag)
    done = 0
    deadline = time.perf_counter() + seconds

    async def client(k: int) -> None:
        nonlocal done
        conn = await Connection.open("127.0.0.1", port)
        i = 0
        try:
            while time.perf_counter() < deadline:
                runs: list[dict[str, Any]] = []
                for j in range(BATCH):
                    run: dict[str, Any] = {
                        "run_id": f"{tag}-{k}-{i}-{j}",
                        "player_id": f"p{rand.randrange(100_000)}",
                        "score": rand.randrange(1_000_000),
                    }
                    if segmented:
                        run["segments"] = {
                            "country": rand.choice(COUNTRIES),
                            "platform": rand.choice(PLATFORMS),
                        }
                    runs.append(run)
                body = orjson.dumps({"runs": runs})
                status, payload = await conn.request(
                    "POST", f"/v1/boards/{board}/runs:batch", body, SERVER_H
                )
                if status != 200 or b'"error"' in payload:
                    raise RuntimeError(f"batch refused: {status} {payload[:200]!r}")
                done += BATCH
                i += 1
        finally:
            await conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(CLIENTS)))
    return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 4 s instead of 5 of 10")
    args = parser.parse_args()
    rounds, seconds = (3, 4.0) if args.quick else (5, 10.0)
    print(machine_line())
    with servers() as stack, service(stack) as port:
        create_board(port, "plain", windows=WINDOWS)
        create_board(port, "segmented", windows=WINDOWS, segments=["country", "platform"])
        for board, seg in (("plain", False), ("segmented", True)):
            asyncio.run(batches(port, board, 2.0, f"warm-{board}", seg))
        results: list[dict[str, float]] = []
        for r in range(rounds):
            plain = asyncio.run(batches(port, "plain", seconds, f"p{r}", False))
            segmented = asyncio.run(batches(port, "segmented", seconds, f"s{r}", True))
            results.append({"plain": plain, "segmented": segmented, "ratio": segmented / plain})
            print(
                f"round {r + 1}: plain {plain:,.0f} runs/s, segmented {segmented:,.0f} runs/s,"
                f" ratio {segmented / plain:.2f}"
            )
    summary = {
        "plain_runs_per_s": statistics.median(x["plain"] for x in results),
        "segmented_runs_per_s": statistics.median(x["segmented"] for x in results),
        "ratio_median": statistics.median(x["ratio"] for x in results),
        "script_calls_per_run": {"plain": 4, "segmented": 12},
    }
    print(
        f"median: plain {summary['plain_runs_per_s']:,.0f} runs/s, segmented "
        f"{summary['segmented_runs_per_s']:,.0f} runs/s, ratio {summary['ratio_median']:.2f}"
    )
    write_result("segments", {"quick": args.quick, "rounds": results, "summary": summary})


if __name__ == "__main__":
    main()
