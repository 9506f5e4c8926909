"""What the parts of ``python -m bench.submits`` (bench/submits.py) share: the board, the
players, the targets, the load sizes, the full and quick profiles, the event loop and the
progress lines."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass

BOARD = "bench-submits"
BASELINE_BOARD = "bench-baseline"
WINDOWS = ("all-time", "daily", "weekly")
PLAYERS = 100_000
MAX_SCORE = 1_000_000_000
P99_LIMIT_MS = 10.0
TARGET_BATCH_RUNS_PER_S = 17_400
TARGET_SINGLE_RATE = 1000.0
BATCH_SIZE = 1000
BATCH_CLIENTS = 4
SINGLE_CONCURRENCY = 32
MAX_CONNECTIONS = 256
BASELINE_CONNECTIONS = 4
BASELINE_RUNS_PER_PIPELINE = 33  # 99 script calls per pipeline


@dataclass(frozen=True)
class Profile:
    rates: tuple[float, ...]
    step_s: float  # each offered rate
    closed_s: float  # single-run closed loop
    batch_s: float
    baseline_s: float
    drain_timeout_s: float
    rounds: int  # throughput rounds, alternating between the two stacks
    warm_up_s: float  # unmeasured load before timing, per stack


FULL = Profile(
    rates=(250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000),
    step_s=10,
    closed_s=6,
    batch_s=8,
    baseline_s=4,
    drain_timeout_s=120,
    rounds=3,
    warm_up_s=2,
)
QUICK = Profile(
    rates=(500, 1000, 2000),
    step_s=2,
    closed_s=2,
    batch_s=2.5,
    baseline_s=2,
    drain_timeout_s=30,
    rounds=1,
    warm_up_s=1,
)


def new_runner() -> asyncio.Runner:
    """One event loop for the whole run (uvloop when installed: less client CPU)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
