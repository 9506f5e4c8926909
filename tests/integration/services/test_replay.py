"""Replaying the run log (`rankd replay`) and the rebuild/replay CLI commands.

Replays here start at the first sequence this module's runs took, so they re-apply only
runs of boards made here. A separate Runtime (as the CLI builds one) does the replaying.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import sys
import tempfile
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.errors import LogUnavailable
from rankd.periods import ALL_TIME
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.replay import replay, replay_parked
from rankd.stores.redis.scripts import FOLD_MAX_ARGS
from rankd.stores.runlog import LogMessage
from tests.support.common import ADMIN_H, MakeBoard, Urls, new_board_id
from tests.support.durable import (
    BoardState,
    all_reads,
    delete_board_keys,
    pg_best,
    pg_composites,
    pg_snapshot,
    redis_runs,
    redis_state,
    submit,
    wait_consumer_idle,
)
from tests.support.wire import ago, ms, now_ms

ALL_WINDOWS = ["all-time", "daily", "weekly", "monthly"]
SUM_WINDOWS = ["all-time", "daily", "weekly"]
TEN_DAYS_S = 10 * 86_400


@pytest.fixture
def own(bare_runtime: Runtime) -> Runtime:
    """A Runtime without consumer or watchdog, like the one `rankd replay` opens."""
    return bare_runtime


async def replay_from(rt: Runtime, first: int) -> Any:
    return await replay(rt.runlog, rt.applier, first)


async def next_sequence(rt: Runtime) -> int:
    return await rt.runlog.last_sequence() + 1


async def two_boards(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> tuple[str, str]:
    """A best board over every window (runs over five days) and a sum board."""
    best_id = await make_board(windows=ALL_WINDOWS, grace_seconds=TEN_DAYS_S)
    sum_id = await make_board(windows=SUM_WINDOWS, policy="sum")
    ended = {}
    for i in range(24):
        await submit(client, best_id, f"b{i}", f"p{i % 7}", 1000 + 37 * i, ago(hours=5 * i))
        ended[i] = ago(minutes=60 - 2 * i)
        await submit(client, sum_id, f"s{i}", f"p{i % 5}", 3 + i, ended[i])
    await submit(client, sum_id, "s3", "p3", 6, ended[3])  # a resend (its ended_at too)
    await wait_consumer_idle(client, runtime)
    return best_id, sum_id


async def snapshot(
    redis: Redis, pg: AsyncConnection[Any], best_id: str, sum_id: str
) -> tuple[BoardState, BoardState, BoardState, dict[str, Any], dict[str, Any]]:
    return (
        await redis_state(redis, best_id, ALL_WINDOWS),
        await redis_state(redis, sum_id, SUM_WINDOWS),
        await redis_runs(redis, sum_id, SUM_WINDOWS),
        await pg_snapshot(pg, best_id),
        await pg_snapshot(pg, sum_id),
    )


async def test_replaying_twice_changes_nothing(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    own: Runtime,
) -> None:
    first = await next_sequence(own)
    best_id, sum_id = await two_boards(client, runtime, make_board)
    last = await next_sequence(own) - 1
    before = await snapshot(redis, pg, best_id, sum_id)
    assert len(before[0]) >= 4 and before[3]["best"] and before[4]["sum_runs"]

    for _ in range(2):
        report = await replay_from(own, first)
        assert report.messages == last - first + 1
        assert report.parked == 0
        assert report.last_sequence == last
        assert await snapshot(redis, pg, best_id, sum_id) == before


async def test_replay_from_past_the_end_applies_nothing(own: Runtime) -> None:
    end = await next_sequence(own)
    for first in (end, end + 1000):
        report = await replay_from(own, first)
        assert report.messages == 0
        assert report.last_sequence == end - 1


async def test_replay_restores_a_board_lost_from_redis_and_postgres(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    own: Runtime,
) -> None:
    first = await next_sequence(own)
    best_id, sum_id = await two_boards(client, runtime, make_board)
    before = await snapshot(redis, pg, best_id, sum_id)
    reads = await all_reads(client, best_id, ALL_WINDOWS)
    sum_reads = await all_reads(client, sum_id, SUM_WINDOWS)

    await delete_board_keys(redis, best_id, ALL_WINDOWS)
    await delete_board_keys(redis, sum_id, SUM_WINDOWS)
    for table in ("player_best", "sum_runs"):
        await pg.execute(
            f"DELETE FROM {table} WHERE board_id = ANY(%s)",
            ([best_id, sum_id],),
        )
    assert (await pg_snapshot(pg, best_id))["best"] == {}
    assert await redis_state(redis, best_id, ALL_WINDOWS) == {}

    report = await replay_from(own, first)
    assert report.messages > 0
    assert await snapshot(redis, pg, best_id, sum_id) == before
    assert await all_reads(client, best_id, ALL_WINDOWS) == reads
    assert await all_reads(client, sum_id, SUM_WINDOWS) == sum_reads


async def parked_reasons(pg: AsyncConnection[Any], seqs: list[int]) -> dict[int, str]:
    cur = await pg.execute(
        "SELECT stream_seq, reason FROM parked_messages WHERE stream_seq = ANY(%s)", (seqs,)
    )
    return {r[0]: r[1] for r in await cur.fetchall()}


async def park_for_missing_boards(own: Runtime) -> tuple[list[str], list[int], list[Run]]:
    """Park two messages for boards that do not exist yet; returns (boards, seqs, runs)."""
    boards = [new_board_id("later"), new_board_id("later")]
    now = ms(now_ms())
    runs = [Run("late-ok", "lp1", 10, now - 1000, now), Run("late-big", "lp2", 5000, now, now)]
    seqs = [10**12 + random.randrange(10**11) for _ in boards]
    messages = [
        LogMessage(seq, f"{own.settings.subject_prefix}.{b}", encode_message(b, [r]))
        for seq, b, r in zip(seqs, boards, runs, strict=True)
    ]
    outcome = await own.applier.apply(messages)
    assert sorted(outcome.parked) == sorted(seqs)
    return boards, seqs, runs


async def test_replay_parked_applies_what_applies_now_and_keeps_the_rest(
    client: httpx.AsyncClient, redis: Redis, pg: AsyncConnection[Any], own: Runtime
) -> None:
    boards, seqs, runs = await park_for_missing_boards(own)
    before = await parked_reasons(pg, seqs)
    assert all("does not exist" in reason for reason in before.values()), before

    # the cause is fixed for one; the other board cannot hold its run (max_score 1000)
    for board_id, config in zip(boards, [{}, {"max_score": 1000}], strict=True):
        body = {"windows": ["all-time"], **config}
        response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
        assert response.status_code == 201, response.text

    report = await replay_parked(own.applier, own.pg)
    assert report.messages >= 2
    assert report.applied >= 1
    after = await parked_reasons(pg, seqs)
    assert set(after) == {seqs[1]}  # the applied one is no longer parked
    assert after[seqs[1]] != before[seqs[1]]  # the other keeps its new error
    assert (ALL_TIME, ALL_TIME, runs[0].player_id) in await pg_best(pg, boards[0])
    assert await redis_state(redis, boards[0], ["all-time"]) != {}
    assert await pg_best(pg, boards[1]) == {}

    again = await replay_parked(own.applier, own.pg)
    assert seqs[0] not in await parked_reasons(pg, seqs)
    assert again.applied <= report.applied  # the applied one is not tried again


async def run_cli(urls: Urls, *args: str) -> tuple[int, str, str]:
    """`python -m rankd.cli ...` on the test servers; returns (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "COLUMNS": "200",  # rich wraps error boxes at the terminal width
    }
    with tempfile.TemporaryDirectory(prefix="rankd-cli-") as cwd:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "rankd.cli",
            *args,
            env=env,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cli_replay(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    urls: Urls,
    redis: Redis,
    own: Runtime,
) -> None:
    first = await next_sequence(own)
    board_id = await make_board(windows=["all-time", "daily"])
    for i in range(5):
        await submit(client, board_id, f"c{i}", f"p{i}", 10 * i, ago(minutes=i))
    await wait_consumer_idle(client, runtime)
    last = await next_sequence(own) - 1
    before = await redis_state(redis, board_id, ["all-time", "daily"])

    code, out, err = await run_cli(urls, "replay", "--from-sequence", str(first))
    assert code == 0, out + err
    found = re.search(r"replayed (\d+) messages up to sequence (\d+)", out)
    assert found, out
    assert int(found[1]) == last - first + 1
    assert int(found[2]) == last
    assert await redis_state(redis, board_id, ["all-time", "daily"]) == before


async def test_cli_replay_parked(
    client: httpx.AsyncClient, urls: Urls, pg: AsyncConnection[Any], own: Runtime
) -> None:
    boards, seqs, _ = await park_for_missing_boards(own)
    response = await client.put(
        f"/v1/boards/{boards[0]}", json={"windows": ["all-time"]}, headers=ADMIN_H
    )
    assert response.status_code == 201, response.text

    code, out, err = await run_cli(urls, "replay", "--parked")
    assert code == 0, out + err
    found = re.search(r"re-applied (\d+) of (\d+) parked messages in \S+; (\d+) still parked", out)
    assert found, out
    assert int(found[1]) >= 1 and int(found[2]) >= 2 and int(found[3]) >= 1
    assert int(found[1]) + int(found[3]) == int(found[2])
    assert set(await parked_reasons(pg, seqs)) == {seqs[1]}

    code, out, err = await run_cli(urls, "replay", "--parked", "--from-sequence", "3")
    assert code != 0
    assert "--parked replays the parked messages" in out + err


async def test_cli_rebuild_one_board(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, urls: Urls, redis: Redis
) -> None:
    board_id = await make_board(windows=ALL_WINDOWS)
    for i in range(9):
        await submit(client, board_id, f"c{i}", f"p{i % 4}", 5 + i, ago(minutes=3 * i))
    await wait_consumer_idle(client, runtime)
    before = await redis_state(redis, board_id, ALL_WINDOWS)
    reads = await all_reads(client, board_id, ALL_WINDOWS)
    await delete_board_keys(redis, board_id, ALL_WINDOWS)

    code, out, err = await run_cli(urls, "rebuild", "--board", board_id)
    assert code == 0, out + err
    found = re.search(r"rebuilt (\d+) periods, (\d+) members", out)
    assert found, out
    assert int(found[1]) == len(before)
    assert int(found[2]) == sum(len(m) for m in before.values())
    assert await redis_state(redis, board_id, ALL_WINDOWS) == before
    assert await all_reads(client, board_id, ALL_WINDOWS) == reads


async def test_cli_rebuild_rejects_an_unknown_window(urls: Urls) -> None:
    code, out, err = await run_cli(urls, "rebuild", "--window", "yearly")
    assert code != 0
    message = out + err
    assert "window must be one of all-time, daily, weekly, monthly" in message
    assert "Traceback" not in message


async def publish_as_a_client_would(own: Runtime, board: str, payload: bytes, msg_id: str) -> int:
    """A publish retried after a timeout with the same message id, which the log takes once
    (its duplicate window): a three-node log on a loaded 2-core machine can take longer
    than RANKD_PUBLISH_TIMEOUT_S to replicate a 1,000-run message."""
    for attempt in range(3):
        try:
            return await own.runlog.publish(board, payload, msg_id)
        except LogUnavailable:
            if attempt == 2:
                raise
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def test_a_replay_of_a_long_log_of_one_board_stays_within_what_redis_takes(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    own: Runtime,
) -> None:
    """64 messages of 1,000 runs of one board, replayed as one batch: the folded script
    calls on its one key take over six times FOLD_MAX_ARGS (one call's bound, far below Redis's
    1,048,576 arguments, "invalid mbulk count"); they go in bounded parts, in order."""
    board = await make_board(windows=["all-time"])
    messages, players = 64, 1000
    assert messages * players * 4 > 6 * FOLD_MAX_ARGS  # four arguments a run at least
    first = await next_sequence(own)
    now = ms(now_ms())
    for m in range(messages):
        runs = [Run(f"L{m}-{i}", f"p{i}", m * players + i, now, now) for i in range(players)]
        await publish_as_a_client_would(
            own, board, encode_message(board, runs), f"long-{board}-{m}"
        )
    report = await replay(own.runlog, own.applier, first, batch=1000)
    assert report.messages >= messages and report.parked == 0
    best = await pg_best(pg, board)
    # every player's best is its run of the last message, in PostgreSQL and in Redis alike
    assert {p: v[1] for (_, _, p), v in best.items()} == {
        f"p{i}": (messages - 1) * players + i for i in range(players)
    }
    assert await redis_state(redis, board, ["all-time"]) == await pg_composites(pg, board)
    # the session's own consumer applies them too: its work stays inside this test
    took = await wait_consumer_idle(client, runtime, within_s=120)
    print(f"the session consumer took {took:.1f}s more")
