"""A late run on a sum board waits out a player's count lock that the log consumer may hold
for its whole batch (services/late_sums.py, COUNT_LOCK_WAIT_MS), rather than answering 503
after 2 s; and late runs waiting so hold at most half the PostgreSQL pool, whose other half
stays free for the log consumer and other work."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import psycopg

from rankd.runs import Run
from rankd.runtime import Runtime
from tests.integration.api.test_oracle import DAY_MS, iso, sum_board
from tests.support.common import SERVER_H, Urls

HELD_S = 3.0  # past the apply lock's 2 s, within the count lock's wait


def late_run(run_id: str, player: str, score: int) -> dict[str, object]:
    ended_ms = int(time.time() * 1000) - 3 * DAY_MS  # past Redis's horizon
    return {"run_id": run_id, "player_id": player, "score": score, "ended_at": iso(ended_ms)}


@contextlib.asynccontextmanager
async def holding_count_lock(urls: Urls, board_id: str, player: str) -> AsyncIterator[None]:
    """The player's count lock on the board's all-time standings, held by another session
    (as the log consumer's batch holds it) until the block ends."""
    count_lock = "|".join((board_id, "all-time", "all-time", "", player))
    holder = await psycopg.AsyncConnection.connect(urls.postgres)
    async with holder, holder.transaction():
        await holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (count_lock,))
        yield


async def test_a_late_run_waits_out_a_count_lock_held_for_seconds(
    client: httpx.AsyncClient, urls: Urls
) -> None:
    board_id = await sum_board(client)
    player = "p-held"
    async with holding_count_lock(urls, board_id, player):
        submit = asyncio.create_task(
            client.post(
                f"/v1/boards/{board_id}/runs", json=late_run("late-1", player, 7), headers=SERVER_H
            )
        )
        await asyncio.sleep(HELD_S)
        # still waiting: the late path takes this very lock (and did not give up at 2 s)
        assert not submit.done(), (await submit).text
    response = await submit
    assert response.status_code == 200, response.text
    [standing] = response.json()["standings"]
    assert (standing["score"], standing["improved"]) == (7, True)


async def submit_after_redis_counted(
    client: httpx.AsyncClient, runtime: Runtime, player: str, counted_by_end: bool
) -> tuple[int, int]:
    """A late run of ``player`` written through the submit path's pipeline after Redis
    has counted its id already: scored by its receipt, as the log consumer sends the count
    PostgreSQL made, or (``counted_by_end``) by its end, as within the horizon. The answer's
    (improved, counted); the entry holds the run once."""
    board_id = await sum_board(client)
    board = await runtime.boards.get(board_id)
    now_ms = int(time.time() * 1000)
    run = Run(f"late-{player}", player, 7, now_ms - 3 * DAY_MS, now_ms)
    pipeline = runtime.submitter.pipeline
    [unmarked] = pipeline.plan(board, [run], now_ms)
    [target] = [t for t in unmarked if t.disposition == "late"]
    counted_ms = run.ended_at_ms if counted_by_end else run.received_at_ms
    await runtime.applier.writes.apply(
        board, [[replace(target, counted_ms=counted_ms)]], ranked=True
    )
    written = await pipeline.write(board, pipeline.plan(board, [run], now_ms, mark=True), now_ms)
    [[reply]] = written.replies
    assert reply is not None
    response = await client.get(f"/v1/boards/{board_id}/players/{player}")
    assert response.status_code == 200, response.text
    assert response.json()["score"] == 7  # counted once
    return reply[0], reply[3]


async def test_a_late_run_counted_in_redis_by_the_consumer_first_still_says_improved(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    """The log consumer, waiting on the count lock behind the submit path, sees the run
    counted in PostgreSQL and writes it to Redis, and can do so between the submit path's
    commit and its own Redis write. Redis then answers the submit path "not changed"; the
    answer must still say improved, as PostgreSQL decided."""
    improved, counted = await submit_after_redis_counted(client, runtime, "p-raced", False)
    assert (improved, counted) == (1, 3)  # counted before, by this very count


async def test_a_run_counted_within_the_horizon_and_resent_late_says_not_improved(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    """A run Redis counted while it was within the horizon, resent once it is late and
    before the log consumer wrote the first copy to PostgreSQL: PostgreSQL counts it (new
    to it), Redis had it; a resend, not improved."""
    improved, counted = await submit_after_redis_counted(client, runtime, "p-resent", True)
    assert (improved, counted) == (0, 1)  # counted before


async def test_late_runs_waiting_on_a_count_lock_leave_half_the_pool_to_the_rest(
    client: httpx.AsyncClient, urls: Urls, runtime: Runtime
) -> None:
    """A burst of late runs for one player, all waiting on the player's count lock, held
    every pooled connection while they waited (each settles in a transaction of its own):
    the log consumer, a review decision and /readyz's probe then waited for the pool, and
    the probe called PostgreSQL down. Now they hold at most half of it."""
    board_id = await sum_board(client)
    player = "p-burst"
    burst = 2 * runtime.settings.postgres_pool_max
    async with holding_count_lock(urls, board_id, player):
        submits = [
            asyncio.create_task(
                client.post(
                    f"/v1/boards/{board_id}/runs",
                    json=late_run(f"burst-{i}", player, 1),
                    headers=SERVER_H,
                )
            )
            for i in range(burst)
        ]
        # as many as have a request slot wait on the lock, in transactions of their own (and
        # the log consumer's batch may, applying the same runs); no more join them
        slots = runtime.settings.postgres_pool_max // 2
        deadline = time.monotonic() + 20
        while await waiting_on_advisory_locks(urls) < slots:
            assert time.monotonic() < deadline, "the late runs never reached the count lock"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert await waiting_on_advisory_locks(urls) <= slots + 1
        assert not any(s.done() for s in submits)
        # another user of the pool gets a connection at once, and the probe says "ok"
        async with runtime.pg.connection(timeout_s=1.0) as conn:
            await conn.execute("SELECT 1")
        assert (await runtime.health.probe(timeout_s=1.0))["postgres"] == "ok"
    answers = await asyncio.gather(*submits)
    assert [a.status_code for a in answers] == [200] * burst, [a.text for a in answers]
    counted = [a.json()["standings"][0]["score"] for a in answers]
    assert max(counted) == burst  # each run counted once


async def waiting_on_advisory_locks(urls: Urls) -> int:
    async with await psycopg.AsyncConnection.connect(urls.postgres) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0
