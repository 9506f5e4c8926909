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

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import hiredis
import nats
import orjson
from nats.js.errors import NotFoundError
from redis.asyncio import Redis

from bench.common import (
    SERVER_H,
    Latencies,
    closed_loop,
    create_board,
    highest_sustained,
    machine_line,
    open_loop,
    servers,
    service,
    write_result,
)
from bench.rawhttp import Connection
from rankd.boards import BoardConfig
from rankd.embedded import EmbeddedServers
from rankd.plan import plan
from rankd.runs import Run
from rankd.services.consumer import DURABLE
from rankd.settings import Settings
from rankd.stores.redis.scripts import SUBMIT_BEST
from rankd.stores.redis.writes import script_call

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


# --- HTTP load -------------------------------------------------------------------------------


class Pool:
    """Keep-alive connections, one request on each at a time; grows up to ``limit``."""

    def __init__(self, port: int, limit: int = MAX_CONNECTIONS) -> None:
        self.port = port
        self.limit = limit
        self.idle: list[Connection] = []
        self.opened = 0
        self.peak = 0
        self._free = asyncio.Condition()

    async def fill(self, n: int) -> None:
        for _ in range(n - self.opened):
            self.idle.append(await Connection.open("127.0.0.1", self.port))
            self.opened += 1
        self.peak = max(self.peak, self.opened)

    async def _acquire(self) -> Connection:
        async with self._free:
            while not self.idle and self.opened >= self.limit:
                await self._free.wait()
            if self.idle:
                return self.idle.pop()
            self.opened += 1
            self.peak = max(self.peak, self.opened)
        try:
            return await Connection.open("127.0.0.1", self.port)
        except OSError:
            await self._drop()
            raise

    async def _drop(self) -> None:
        async with self._free:
            self.opened -= 1
            self._free.notify()

    async def request(self, path: str, body: bytes) -> tuple[int, bytes]:
        """(status, body); status 0 when the connection failed (it is dropped)."""
        try:
            conn = await self._acquire()
        except OSError:
            return 0, b""
        try:
            answer = await conn.request("POST", path, body, SERVER_H)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            with contextlib.suppress(Exception):
                await conn.close()
            await self._drop()
            return 0, b""
        async with self._free:
            self.idle.append(conn)
            self._free.notify()
        return answer

    async def close(self) -> None:
        for conn in self.idle:
            with contextlib.suppress(Exception):
                await conn.close()
        self.idle.clear()


def single_call(pool: Pool, prefix: str, seed: int) -> Callable[[int], Awaitable[bool]]:
    """One single-run submit per call: random player among PLAYERS, unique run id."""
    path = f"/v1/boards/{BOARD}/runs"
    rand = random.Random(seed)
    ids = itertools.count()  # not the call's index: open_loop restarts it at every rate

    async def call(i: int) -> bool:
        body = orjson.dumps(
            {
                "run_id": f"{prefix}{next(ids)}",
                "player_id": f"p{rand.randrange(PLAYERS)}",
                "score": rand.randrange(MAX_SCORE),
            }
        )
        status, _ = await pool.request(path, body)
        return status == 200

    return call


def batch_call(pool: Pool, prefix: str, seed: int) -> Callable[[int], Awaitable[bool]]:
    """One batch of BATCH_SIZE runs per call; False if any run of it was refused."""
    path = f"/v1/boards/{BOARD}/runs:batch"
    rand = random.Random(seed)

    async def call(i: int) -> bool:
        runs = [
            {
                "run_id": f"{prefix}{i}.{k}",
                "player_id": f"p{rand.randrange(PLAYERS)}",
                "score": rand.randrange(MAX_SCORE),
            }
            for k in range(BATCH_SIZE)
        ]
        status, payload = await pool.request(path, orjson.dumps({"runs": runs}))
        return status == 200 and b'"error"' not in payload

    return call


async def warm_up(port: int, seconds: float) -> None:
    """Connections, board cache, script cache and period index touched before timing."""
    pool = Pool(port)
    try:
        await pool.fill(16)
        await closed_loop(single_call(pool, "warm-s", 1), 16, seconds / 2)
        await closed_loop(batch_call(pool, "warm-b", 2), 2, seconds / 2)
    finally:
        await pool.close()


async def single_ladder(port: int, profile: Profile) -> dict[str, Any]:
    """p50/p99 per offered rate, up to the first rate that misses p99 <= 10 ms."""
    pool = Pool(port)
    try:
        await pool.fill(32)
        call = single_call(pool, "l-", 3)
        best, steps = await highest_sustained(
            call, list(profile.rates), profile.step_s, P99_LIMIT_MS
        )
        at_target = next((s for s in steps if s["offered_per_s"] == TARGET_SINGLE_RATE), None)
        if at_target is None:  # the ladder stopped below the target rate: measure it anyway
            lat = await open_loop(call, TARGET_SINGLE_RATE, profile.step_s)
            at_target = {"offered_per_s": TARGET_SINGLE_RATE, **lat.summary()}
        return {
            "p99_limit_ms": P99_LIMIT_MS,
            "step_seconds": profile.step_s,
            "highest_sustained_per_s": best,
            "steps": steps,
            "at_1000_per_s": at_target,
            "connections_peak": pool.peak,
        }
    finally:
        await pool.close()


async def timed_closed(
    call: Callable[[int], Awaitable[bool]], concurrency: int, seconds: float
) -> tuple[Latencies, float]:
    started = time.perf_counter()
    lat = await closed_loop(call, concurrency, seconds)
    return lat, time.perf_counter() - started


async def single_throughput(port: int, seconds: float, tag: str) -> dict[str, Any]:
    pool = Pool(port)
    try:
        await pool.fill(SINGLE_CONCURRENCY)
        call = single_call(pool, f"c{tag}-", 4)
        lat, elapsed = await timed_closed(call, SINGLE_CONCURRENCY, seconds)
    finally:
        await pool.close()
    ok = len(lat.samples) - lat.errors
    return {
        "concurrency": SINGLE_CONCURRENCY,
        "seconds": round(elapsed, 3),
        "runs_per_s": round(ok / elapsed, 1),
        "p50_ms": round(lat.pct(50), 3),
        "p99_ms": round(lat.pct(99), 3),
        "errors": lat.errors,
        "requests": len(lat.samples),
    }


async def batch_throughput(port: int, seconds: float, tag: str) -> dict[str, Any]:
    pool = Pool(port)
    try:
        await pool.fill(BATCH_CLIENTS)
        call = batch_call(pool, f"b{tag}-", 5)
        lat, elapsed = await timed_closed(call, BATCH_CLIENTS, seconds)
    finally:
        await pool.close()
    ok = len(lat.samples) - lat.errors
    return {
        "runs_per_batch": BATCH_SIZE,
        "clients": BATCH_CLIENTS,
        "seconds": round(elapsed, 3),
        "batches": len(lat.samples),
        "runs": ok * BATCH_SIZE,
        "runs_per_s": round(ok * BATCH_SIZE / elapsed, 1),
        "batch_p50_ms": round(lat.pct(50), 3),
        "batch_p99_ms": round(lat.pct(99), 3),
        "errors": lat.errors,
    }


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


# --- the baseline: the same script, straight to Redis -----------------------------------------


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(value), value)


@dataclass(frozen=True)
class _WindowTemplate:
    prefix: bytes  # EVALSHA sha 2 key key
    time_key: int  # the low bits of the composite for a run ending now
    time_bits: int
    tail: bytes  # the argument after the member (the exact end time), RESP-encoded
    clock: bytes  # the arguments after the mark (now, forget marks before), RESP-encoded


def _templates(board: BoardConfig, now_ms: int) -> list[_WindowTemplate]:
    """What ``plan()`` sends for a run ending now, with the score part left out."""
    sha = SUBMIT_BEST.sha.encode()
    out = []
    # as the submit path sends it: marked applied (services/applier.py)
    for target in plan(board, Run("t", "p0", 0, now_ms, now_ms), mark=True):
        call = script_call(board, target, now_ms, 15_000)
        assert target.applies and call[0] is SUBMIT_BEST, target
        _, keys, args = call
        composite, _, ended, _, now, forget = args
        codec = board.codecs[target.window]
        assert codec.order == "desc" and codec.score_key(0) == 0
        prefix = b"*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%b\r\n" % (3 + len(keys) + len(args), sha)
        prefix += _bulk(str(len(keys)).encode()) + b"".join(_bulk(k.encode()) for k in keys)
        tail = _bulk(str(ended).encode())
        clock = _bulk(str(now).encode()) + _bulk(str(forget).encode())
        out.append(_WindowTemplate(prefix, int(composite), codec.time_bits, tail, clock))
    return out


def _pipeline(board: BoardConfig, rand: random.Random, runs: int) -> bytes:
    templates = _templates(board, int(time.time() * 1000))
    parts = []
    for _ in range(runs):
        score = rand.randrange(MAX_SCORE)
        name = b"p%d" % rand.randrange(PLAYERS)
        player = _bulk(name)
        mark = _bulk(b"%b|b%d" % (name, rand.randrange(1 << 62)))
        for t in templates:
            parts.append(t.prefix)
            parts.append(_bulk(b"%d" % (score << t.time_bits | t.time_key)))
            parts.append(player)
            parts.append(t.tail)
            parts.append(mark)
            parts.append(t.clock)
    return b"".join(parts)


async def script_baseline(redis_url: str, seconds: float) -> dict[str, Any]:
    """Script calls/s of submit_best by EVALSHA, pipelined from a few connections."""
    url = urlparse(redis_url)
    host, port = url.hostname or "127.0.0.1", url.port or 6379
    redis = Redis.from_url(redis_url)
    try:
        await redis.script_load(SUBMIT_BEST.source)
    finally:
        await redis.aclose()
    board = BoardConfig(BASELINE_BOARD, windows=WINDOWS, max_score=MAX_SCORE)
    depth = BASELINE_RUNS_PER_PIPELINE * len(WINDOWS)
    done = 0
    measuring = False

    async def worker(seed: int, deadline: float) -> None:
        nonlocal done
        rand = random.Random(seed)
        reader, writer = await asyncio.open_connection(host, port)
        parser = hiredis.Reader()
        try:
            while time.perf_counter() < deadline:
                writer.write(_pipeline(board, rand, BASELINE_RUNS_PER_PIPELINE))
                got = 0
                while got < depth:
                    data = await reader.read(1 << 16)
                    if not data:
                        raise ConnectionError("redis closed the connection")
                    parser.feed(data)
                    while (reply := parser.gets()) is not False:
                        got += 1
                        if not (isinstance(reply, list) and len(reply) == 5):
                            raise RuntimeError(f"submit_best answered {reply!r}")
                if measuring:
                    done += depth
        finally:
            writer.close()
            await writer.wait_closed()

    # a short unmeasured warm-up fills the keys, then the measured run
    warm = time.perf_counter() + min(1.0, seconds / 2)
    await asyncio.gather(*(worker(100 + k, warm) for k in range(BASELINE_CONNECTIONS)))
    measuring = True
    started = time.perf_counter()
    await asyncio.gather(*(worker(200 + k, started + seconds) for k in range(BASELINE_CONNECTIONS)))
    elapsed = time.perf_counter() - started
    calls_per_s = done / elapsed
    redis = Redis.from_url(redis_url)
    try:  # the calls landed: every window's key holds players
        now_ms = int(time.time() * 1000)
        members = {
            t.window: await redis.zcard(script_call(board, t)[1][0])
            for t in plan(board, Run("t", "p0", 0, now_ms, now_ms))
            if t.applies
        }
    finally:
        await redis.aclose()
    assert all(members.values()), members
    return {
        "script": SUBMIT_BEST.name,
        "how": "EVALSHA over raw RESP, hiredis parser, closed loop",
        "connections": BASELINE_CONNECTIONS,
        "calls_per_pipeline": depth,
        "seconds": round(elapsed, 3),
        "script_calls": done,
        "members": members,
        "script_calls_per_s": round(calls_per_s, 1),
        "runs_per_s": round(calls_per_s / len(WINDOWS), 1),
    }


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


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


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
