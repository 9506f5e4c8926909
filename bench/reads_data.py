"""The data of ``python -m bench.reads`` (bench/reads.py): an n-member all-time board loaded
straight into Redis through ``redis-cli --pipe`` (valid composites, players scattered over
the ranks), Redis's memory, and a check that the service serves the board as loaded."""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import redis

from rankd.codec import stamp
from rankd.embedded import find_redis_server

MAX_SCORE = 1_000_000_000  # the board default; 30 score bits leave 23 time bits
TIME_BITS = 53 - MAX_SCORE.bit_length()
TIME_PART = (1 << TIME_BITS) - 1  # achieved at the epoch's start: the earliest time unit
# the members' stamp (codec.member): no exact time recorded, as the board keeps no times hash
STAMP = stamp(0).encode()
CHUNK = 1000  # members per ZADD


# --- the data: rank r (1 = best) of an n-member board is player p<perm(r)> ----------------


def multiplier(n: int) -> int:
    """A multiplier coprime to ``n``: r -> (r-1)*a mod n + 1 is then a permutation of 1..n."""
    a = 7_777_777 % n or 1
    while math.gcd(a, n) != 1:
        a += 1
    return a


def player_id(rank: int, n: int) -> str:
    """The id of the player at ``rank``: ids are p1..pn, scattered over the ranks."""
    return f"p{(rank - 1) * multiplier(n) % n + 1}"


def score_at(rank: int, n: int) -> int:
    """Distinct scores, evenly spread below max_score, best first."""
    return (n - rank + 1) * (MAX_SCORE // n)


def composite_at(rank: int, n: int) -> int:
    return (score_at(rank, n) << TIME_BITS) | TIME_PART


def redis_cli() -> Path:
    return Path(find_redis_server()).parent / "redis-cli"


def _resp_chunks(key: str, n: int) -> Iterator[bytes]:
    """Multi-member ZADDs of the whole board in ascending score order (rank n first)."""
    a, step = multiplier(n), MAX_SCORE // n
    head = b"$4\r\nZADD\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
    for top in range(n, 0, -CHUNK):
        low = max(0, top - CHUNK)
        parts = [b"*%d\r\n" % (2 + 2 * (top - low)), head]
        for rank in range(top, low, -1):
            composite = b"%d" % ((((n - rank + 1) * step) << TIME_BITS) | TIME_PART)
            member = STAMP + b"p%d" % ((rank - 1) * a % n + 1)
            parts.append(
                b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(composite), composite, len(member), member)
            )
        yield b"".join(parts)


def load_board(redis_port: int, key: str, n: int) -> float:
    """Fill ``key`` with n members through ``redis-cli --pipe``; returns seconds."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(redis_cli()), "-p", str(redis_port), "--pipe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdin is not None
    for chunk in _resp_chunks(key, n):
        process.stdin.write(chunk)
    process.stdin.close()
    output = process.stdout.read().decode() if process.stdout else ""
    if process.wait() != 0 or "errors: 0" not in output:
        raise RuntimeError(f"redis-cli --pipe failed: {output}")
    seconds = time.perf_counter() - started
    card = redis.Redis(port=redis_port).zcard(key)
    if card != n:
        raise RuntimeError(f"{key} holds {card} members, expected {n}")
    wait_for_aof_rewrite(redis_port)
    return seconds


def wait_for_aof_rewrite(redis_port: int, within_s: float = 300) -> None:
    """A big load makes Redis rewrite its AOF in a forked child; measuring while it runs
    would measure the rewrite's CPU and disk, not the reads."""
    client = redis.Redis(port=redis_port)
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        info: dict[str, Any] = client.info("persistence")
        if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
            return
        time.sleep(0.5)


def used_memory(redis_port: int) -> int:
    info: dict[str, Any] = redis.Redis(port=redis_port).info("memory")
    return int(info["used_memory"])


def check_board(port: int, board: str, n: int) -> None:
    """The service serves the loaded board with the ranks the loader meant."""
    base = f"http://127.0.0.1:{port}/v1/boards/{board}"
    top = httpx.get(f"{base}/top?n=3", timeout=10).json()
    assert top["total"] == n, top
    assert [e["player_id"] for e in top["entries"]] == [player_id(r, n) for r in (1, 2, 3)], top
    assert top["entries"][0]["score"] == score_at(1, n), top
    rank = n // 2
    entry = httpx.get(f"{base}/players/{player_id(rank, n)}", timeout=10).json()
    assert entry["rank"] == rank and entry["score"] == score_at(rank, n), entry
