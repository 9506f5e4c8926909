"""The baseline of ``python -m bench.submits`` (bench/submits.py): the same Lua script
(``submit_best`` by EVALSHA, the calls ``plan()`` makes) sent straight to Redis from a lean
pipelined client, the physical limit the service's submits are compared with."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import hiredis
from redis.asyncio import Redis

from bench.submits_base import (
    BASELINE_BOARD,
    BASELINE_CONNECTIONS,
    BASELINE_RUNS_PER_PIPELINE,
    MAX_SCORE,
    PLAYERS,
    WINDOWS,
)
from rankd.boards import BoardConfig
from rankd.plan import plan
from rankd.runs import Run
from rankd.stores.redis.scripts import SUBMIT_BEST, SUBMIT_REPLY_WIDTH
from rankd.stores.redis.writes import script_call

# --- the baseline: the same script, straight to Redis -----------------------------------------


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(value), value)


@dataclass(frozen=True)
class _WindowTemplate:
    prefix: bytes  # EVALSHA sha 2 key key
    time_key: int  # the low bits of the composite for a run ending now
    time_bits: int
    tail: bytes  # the argument after the member (the exact end time), RESP-encoded
    clock: bytes  # the arguments after the mark (now, forget marks before, metadata), RESP


def _templates(board: BoardConfig, now_ms: int) -> list[_WindowTemplate]:
    """What ``plan()`` sends for a run ending now, with the score part left out."""
    sha = SUBMIT_BEST.sha.encode()
    out = []
    # as the submit path sends it: marked applied (services/applier.py)
    for target in plan(board, Run("t", "p0", 0, now_ms, now_ms), mark=True):
        call = script_call(board, target, now_ms, 15_000)
        assert target.applies and call[0] is SUBMIT_BEST, target
        _, keys, args = call
        composite, _, ended, _, now, forget, metadata = args
        codec = board.codecs[target.window]
        assert codec.order == "desc" and codec.score_key(0) == 0
        prefix = b"*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%b\r\n" % (3 + len(keys) + len(args), sha)
        prefix += _bulk(str(len(keys)).encode()) + b"".join(_bulk(k.encode()) for k in keys)
        tail = _bulk(str(ended).encode())
        clock = _bulk(str(now).encode()) + _bulk(str(forget).encode())
        clock += _bulk(str(metadata).encode())  # none: the baseline's runs carry no metadata
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
                        if not (isinstance(reply, list) and len(reply) == SUBMIT_REPLY_WIDTH):
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
