"""Fault injection for erasure's log scrub: the service is killed (SIGKILL, at a random
moment) while its scrubber removes an erased player's runs from the log message by message;
the next instance finishes the scrub alone. Nothing of the player stays in the log, and no
other player's run in those shared messages is lost (each was published again in a message
of its own before the original went; publishing twice is harmless)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import psycopg
import pytest
from redis.asyncio import Redis

from rankd.runs import decode_batch
from rankd.stores.runlog import JetStreamLog
from tests.support.common import ADMIN, ADMIN_H, SERVER, SERVER_H, Urls, make_settings, new_board_id
from tests.system.test_repairs import last_sequence, pg_scores, read_score
from tests.system.test_workers import spawn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

MESSAGES = 300  # log messages holding the erased player's runs, beside others'
PER_MESSAGE = 100


@contextlib.asynccontextmanager
async def service(
    urls: Urls, log: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, subprocess.Popen[bytes]]]:
    """One `rankd serve` on the shared servers, scrubbing every second; yields the client
    and its process (the test may kill it; a live one is stopped at the end)."""
    from tests.support.live import free_port

    port = free_port()
    env = {
        **os.environ,
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_ADMIN_KEYS": ADMIN,
        "RANKD_SERVER_KEYS": SERVER,
        "RANKD_LOG_LEVEL": "info",
        "RANKD_SEASON_JOB_INTERVAL_S": "0",
        "RANKD_ERASURE_SCRUB_INTERVAL_S": "1",
    }
    process = spawn(port, env, log.open("ab"), 1)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz", timeout=2)).status_code == 200:
                        break
                assert process.poll() is None, "rankd serve exited: see serve.log"
                assert time.monotonic() < deadline, "rankd serve did not start"
                await asyncio.sleep(0.2)
            yield http, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.to_thread(process.wait, 30)


def scrubbed(postgres_url: str, player: str) -> bool:
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT scrubbed_ms FROM erasures WHERE player_id = %s", (player,)
        ).fetchone()
    return row is not None and row[0] is not None


async def runs_in_log(urls: Urls, board: str, first: int) -> dict[str, int]:
    """How many runs of each player the log holds for ``board`` from ``first`` on, read as
    a replay reads it."""
    settings = make_settings(urls)
    runlog = JetStreamLog(
        urls.nats, stream=settings.stream, subject_prefix=settings.subject_prefix, timeout_s=10
    )
    await runlog.open()
    found: dict[str, int] = {}
    try:
        last = await runlog.last_sequence()
        sub = await runlog.read_from(first)
        try:
            while True:
                messages = await sub.fetch(500, 2.0)
                for message in messages:
                    with contextlib.suppress(ValueError):
                        board_id, _, runs = decode_batch(message.data)
                        if board_id == board:
                            for run in runs:
                                found[run.player_id] = found.get(run.player_id, 0) + 1
                if not messages or messages[-1].seq >= last:
                    break
        finally:
            await sub.close()
    finally:
        await runlog.close()
    return found


async def test_a_scrub_killed_midway_is_finished_by_the_next_instance_losing_nothing(
    urls: Urls, redis: Redis, tmp_path: Path
) -> None:
    seed = int(os.environ.get("RANKD_TEST_SEED", str(time.time_ns() % 1_000_000)))
    rng = random.Random(seed)
    print(f"\n[scrub] seed {seed}")
    board = new_board_id("scrub")
    victim = new_board_id("erased")
    log = tmp_path / "serve.log"
    best: dict[str, int] = {}
    async with service(urls, log) as (http, process):
        created = await http.put(
            f"/v1/boards/{board}", json={"windows": ["all-time"]}, headers=ADMIN_H
        )
        assert created.status_code == 201, created.text
        first = await last_sequence(urls) + 1
        for m in range(MESSAGES):
            runs = [{"run_id": f"v{m}", "player_id": victim, "score": 1 + m}]
            for i in range(PER_MESSAGE - 1):
                player, score = f"p{rng.randrange(500)}", rng.randrange(1, 10**6)
                runs.append({"run_id": f"m{m}-{i}", "player_id": player, "score": score})
                best[player] = max(best.get(player, 0), score)
            answer = await http.post(
                f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
            )
            assert answer.status_code == 200, answer.text
        assert (await runs_in_log(urls, board, first)).get(victim) == MESSAGES
        # the erasure waits for the consumer; its scrub starts right after it
        for _ in range(60):
            erased = await http.delete(f"/v1/players/{victim}", headers=ADMIN_H)
            if erased.status_code != 503:
                break
            await asyncio.sleep(1)
        assert erased.status_code == 200, erased.text
        delay = rng.uniform(0.0, 1.5)
        await asyncio.sleep(delay)
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait, 30)
        halfway = await runs_in_log(urls, board, first)
        print(f"[scrub] killed after {delay:.2f}s: {halfway.get(victim, 0)} of {MESSAGES} left")

    async with service(urls, log) as (http, _):
        deadline = time.monotonic() + 90
        while not await asyncio.to_thread(scrubbed, urls.postgres, victim):
            assert time.monotonic() < deadline, "the scrub did not finish: see serve.log"
            await asyncio.sleep(0.5)
        in_log = await runs_in_log(urls, board, first)
        assert victim not in in_log
        # every other player's runs are still in the log, once at least, and their bests
        # read the same from Redis and PostgreSQL
        assert set(best) <= set(in_log)
        durable = await asyncio.to_thread(pg_scores, urls.postgres, board)
        assert durable == best
        shown = await asyncio.gather(*(read_score(http, board, p) for p in best))
        assert dict(zip(best, shown, strict=True)) == best
        assert await read_score(http, board, victim) is None
        top = (await http.get(f"/v1/boards/{board}/top", params={"n": 1000})).json()
        assert victim not in [e["player_id"] for e in top["entries"]]
        assert top["total"] == len(best)
