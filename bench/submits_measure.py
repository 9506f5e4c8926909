"""The measurement of ``python -m bench.submits`` (bench/submits.py): the log consumer's
drain, the two stacks of fresh servers (JetStream sync always and every 2 minutes) and the
phases run on them in turn."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import nats
from nats.js.errors import NotFoundError

from bench.common import create_board, servers, service
from bench.submits_base import (
    BATCH_CLIENTS,
    BATCH_SIZE,
    BOARD,
    MAX_SCORE,
    SINGLE_CONCURRENCY,
    WINDOWS,
    Profile,
    say,
)
from bench.submits_baseline import script_baseline
from bench.submits_load import batch_throughput, single_ladder, single_throughput, warm_up
from rankd.embedded import EmbeddedServers
from rankd.services.consumer import DURABLE
from rankd.settings import Settings

# --- the log consumer -------------------------------------------------------------------------


async def drain(stack: EmbeddedServers, within_s: float) -> float | None:
    """Seconds until the log consumer has applied everything (None: not within ``within_s``)."""
    stream = Settings(
        redis_url=stack.redis_url, postgres_url=stack.postgres_url, nats_url=stack.nats_url
    ).stream
    nc = await nats.connect(servers=stack.nats_url.split(","))  # one server or a cluster's
    try:
        js = nc.jetstream()
        started = time.perf_counter()
        while (elapsed := time.perf_counter() - started) < within_s:
            with contextlib.suppress(NotFoundError):
                info = await js.consumer_info(stream, DURABLE)
                if not info.num_pending and not info.num_ack_pending:
                    return round(elapsed, 3)
            await asyncio.sleep(0.1)
        return None
    finally:
        await nc.close()


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Stack:
    """One set of fresh servers and the service on them."""

    sync: str  # JetStream sync_interval
    servers: EmbeddedServers
    port: int
    drains: list[dict[str, Any]] = field(default_factory=list)
    single: list[dict[str, Any]] = field(default_factory=list)
    batch: list[dict[str, Any]] = field(default_factory=list)

    def drain(self, runner: asyncio.Runner, after: str, profile: Profile) -> float | None:
        seconds = runner.run(drain(self.servers, profile.drain_timeout_s))
        self.drains.append({"after": after, "seconds": seconds})
        if seconds is None:
            say(f"  the log consumer did not catch up within {profile.drain_timeout_s:g} s")
        return seconds


def round_of(runner: asyncio.Runner, stack: Stack, profile: Profile, k: int) -> None:
    """Single-run and batch throughput on one stack, each followed by a consumer drain."""
    tag = f"{stack.sync}{k}"
    say(f"  sync {stack.sync}: single-run, {SINGLE_CONCURRENCY} connections")
    stack.single.append(runner.run(single_throughput(stack.port, profile.closed_s, tag)))
    stack.drain(runner, f"single round {k}", profile)
    say(f"  sync {stack.sync}: batch, {BATCH_CLIENTS} clients x {BATCH_SIZE} runs")
    batch = runner.run(batch_throughput(stack.port, profile.batch_s, tag))
    drained = stack.drain(runner, f"batch round {k}", profile)
    batch["drain_seconds"] = drained
    batch["runs_per_s_incl_drain"] = (
        round(batch["runs"] / (batch["seconds"] + drained), 1) if drained is not None else None
    )
    stack.batch.append(batch)


def median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 1) if values else None


def measure(runner: asyncio.Runner, profile: Profile, workers: int) -> dict[str, Any]:
    """Both stacks up at once; phases alternate between them so drift hits both alike."""
    with contextlib.ExitStack() as exits:
        stacks = []
        for sync in ("always", "2m"):
            say(f"fresh servers, JetStream sync_interval: {sync}")
            started = exits.enter_context(servers(nats_sync=sync))
            port = exits.enter_context(service(started, workers))
            create_board(port, BOARD, windows=list(WINDOWS), max_score=MAX_SCORE)
            stacks.append(Stack(sync, started, port))
        durable, interval = stacks
        baselines: list[dict[str, Any]] = []
        say("baseline: submit_best by EVALSHA straight to Redis (service idle)")
        baselines.append(runner.run(script_baseline(durable.servers.redis_url, profile.baseline_s)))
        for stack in stacks:
            say(f"warm-up, sync {stack.sync}")
            runner.run(warm_up(stack.port, profile.warm_up_s))
            stack.drain(runner, "warm-up", profile)
        say(f"single-run submits at offered rates {list(profile.rates)} (sync always)")
        single = runner.run(single_ladder(durable.port, profile))
        durable.drain(runner, "rate ladder", profile)
        for k in range(profile.rounds):
            say(f"round {k + 1} of {profile.rounds}")
            for stack in stacks if k % 2 == 0 else stacks[::-1]:
                round_of(runner, stack, profile, k)
            if k:  # round 0's baseline ran before the ladder
                baselines.append(
                    runner.run(script_baseline(durable.servers.redis_url, profile.baseline_s))
                )
    return {"single": single, "baselines": baselines, "durable": durable, "interval": interval}
