"""The Lua scripts on every Redis version at hand: the bundled 6.2 and any redis-server on
PATH (CI installs Debian's 7.0). Every version must give identical replies and boards."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from rankd.codec import Codec, player_of
from rankd.embedded import RedisServer, find_redis_server
from rankd.periods import SPAN_MS
from rankd.stores.redis import keys
from rankd.stores.redis.scripts import (
    AROUND,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_SUM,
    run_pipeline,
)


def version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    return out.split("v=")[1].split()[0]


def binaries() -> dict[str, Path]:
    found = {version(find_redis_server()): find_redis_server()}
    on_path = shutil.which("redis-server")
    if on_path:
        found.setdefault(version(Path(on_path)), Path(on_path))
    return found


BINARIES = binaries()


async def exercise(url: str) -> list[Any]:
    """A fixed script workload; returns every reply and the final boards."""
    redis = Redis.from_url(url)
    codec = Codec.create(1_000_000, "desc", SPAN_MS["daily"])
    best = keys.period_keys("v", "daily", "2026-11-30")
    total = keys.period_keys("s", "daily", "2026-11-30")
    replies: list[Any] = []
    try:
        for i, (player, score, offset) in enumerate(
            [("a", 10, 5), ("b", 30, 9), ("a", 20, 50), ("c", 30, 2), ("a", 15, 1), ("b", 30, 9)]
        ):
            composite = codec.pack(score, offset)
            best_call = (
                SUBMIT_BEST,
                (best.public, best.public, best.shadow, best.applied),
                (composite, player, 1000 + offset, "", 0, 0),
            )
            sum_args = (f"r{i % 5}", player, score, codec.time_key(offset), 1 << codec.time_bits)
            sum_call = (
                SUBMIT_SUM,
                (total.public, total.public, total.shadow, total.runs, total.applied),
                (*sum_args, codec.max_score, "desc", 1000 + offset, 0, 0, "", 0, 0),
            )
            replies.append(await run_pipeline(redis, [best_call, sum_call]))
            if i == 3:
                await redis.script_flush()  # NOSCRIPT mid-stream: reloaded and resent
        many = (
            *(codec.pack(25, 7), "a", 7, "", '{"car":1}'),
            *(codec.pack(31, 3), "d", 3, "", ""),
            *(codec.pack(31, 3), "d", 4, "", ""),
        )
        replies.append(
            await run_pipeline(
                redis,
                [
                    (
                        SUBMIT_BEST_MANY,
                        (best.public, best.public, best.shadow, best.applied),
                        (0, 0, *many),
                    )
                ],
            )
        )
        replies.append(await run_pipeline(redis, [(AROUND, (best.public,), ("a", 1))]))
        for key in (best.public, total.public, total.runs):
            replies.append(await redis.zrange(key, 0, -1, withscores=True))
    finally:
        await redis.aclose()
    return replies


def run_on(binary: Path, data_dir: Path) -> list[Any]:
    server = RedisServer(data_dir, binary=binary)
    server.start()
    try:
        return asyncio.run(exercise(server.url))
    finally:
        server.stop()


def test_scripts_behave_the_same_on_every_version(server_dir: Path) -> None:
    results = {v: run_on(b, server_dir / v) for v, b in BINARIES.items()}
    reference = results[version(find_redis_server())]
    # ascending: a (25) < b (30 at offset 9) < c (30 at offset 2, the earlier achiever) < d (31)
    assert [player_of(m.decode()) for m, _ in reference[-3]] == ["a", "b", "c", "d"]
    for v, replies in results.items():
        assert replies == reference, f"Redis {v} differs from the bundled Redis"


def test_a_redis_7_is_covered() -> None:
    majors = {v.split(".")[0] for v in BINARIES}
    if "7" not in majors:
        pytest.skip("no Redis 7 on PATH (CI installs Debian's redis-server 7.0)")
    assert {"6", "7"} <= majors
