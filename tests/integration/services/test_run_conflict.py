"""A run_id resent with other content: 409 run_conflict, and Redis and PostgreSQL agree.

The log dropped a resend within its duplicate window whatever its content, and its ack was
taken as durable: the resend was applied to Redis and answered 200, never reached
PostgreSQL, and vanished at the next rebuild. The run-id registry refuses such a send
before it is logged (services/run_ids.py); the log consumer keeps the first content in log
order; a lost registry is restored from PostgreSQL and the log's tail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.group_commit import message_id
from rankd.services.run_ids import RunIds
from rankd.stores.redis import keys
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.durable import pg_composites, redis_state, wait_consumer_idle, wait_until
from tests.support.wire import assert_error, iso


@pytest.fixture(autouse=True)
async def _consumer_idle_after(client: httpx.AsyncClient, runtime: Runtime) -> AsyncIterator[None]:
    """Leave the shared log consumer idle: later tests count what it applies."""
    yield
    await wait_consumer_idle(client, runtime)


def body(run_id: str, player: str, score: int, ended: datetime | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"run_id": run_id, "player_id": player, "score": score}
    if ended is not None:
        out["ended_at"] = iso(ended)
    return out


async def post(client: httpx.AsyncClient, board: str, run: dict[str, Any]) -> httpx.Response:
    return await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)


async def top(
    client: httpx.AsyncClient, board: str, window: str = "all-time"
) -> list[tuple[str, int]]:
    response = await client.get(f"/v1/boards/{board}/top", params={"window": window, "n": 100})
    assert response.status_code == 200, response.text
    return [(e["player_id"], e["score"]) for e in response.json()["entries"]]


async def assert_stores_agree(
    client: httpx.AsyncClient, runtime: Runtime, redis: Redis, pg: AsyncConnection[Any], board: str
) -> None:
    """Once the consumer is idle, every period's public entries in Redis are the durable
    copy's, before and after a rebuild of the board from PostgreSQL."""
    await wait_consumer_idle(client, runtime)
    windows = ["all-time", "daily"]
    before = await redis_state(redis, board, windows)
    assert before == await pg_composites(pg, board)
    await runtime.rebuilder.rebuild(board=board)
    assert await redis_state(redis, board, windows) == before


async def test_a_sum_run_id_resent_for_another_player_is_refused(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board(windows=["all-time", "daily"], policy="sum")
    assert (await post(client, board, body("run-1", "alice", 10))).status_code == 200
    error = assert_error(await post(client, board, body("run-1", "bob", 20)), 409, "run_conflict")
    assert "run-1" in error["message"]
    assert await top(client, board) == [("alice", 10)]
    await assert_stores_agree(client, runtime, redis, pg, board)
    assert await top(client, board) == [("alice", 10)]
    assert await top(client, board, "daily") == [("alice", 10)]


async def test_a_best_run_resent_with_another_score_is_refused(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board(windows=["all-time", "daily"])
    assert (await post(client, board, body("carol-1", "carol", 5))).status_code == 200
    assert_error(await post(client, board, body("carol-1", "carol", 500)), 409, "run_conflict")
    await assert_stores_agree(client, runtime, redis, pg, board)
    assert await top(client, board) == [("carol", 5)]


async def test_an_identical_resend_stays_harmless(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["all-time", "daily"])
    ended = datetime.now(UTC) - timedelta(seconds=5)
    first = await post(client, board, body("same", "dan", 7, ended))
    again = await post(client, board, body("same", "dan", 7, ended))
    # without ended_at: the first send's ended_at, not a conflict
    bare = await post(client, board, body("same", "dan", 7))
    assert first.status_code == again.status_code == bare.status_code == 200
    for response in (again, bare):
        standings = response.json()["standings"]
        assert [(s["improved"], s["is_best"]) for s in standings] == [(False, True)] * 2
        assert {s["achieved_at"] for s in standings} == {iso(ended)}


async def test_another_ended_at_conflicts_only_when_both_sends_carry_one(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    ended = datetime.now(UTC) - timedelta(seconds=30)
    assert (await post(client, board, body("t1", "eve", 3, ended))).status_code == 200
    moved = body("t1", "eve", 3, ended - timedelta(seconds=1))
    assert_error(await post(client, board, moved), 409, "run_conflict")
    # sent first without ended_at: a later send's ended_at is not compared, and the run
    # keeps its first receipt's time
    first = await post(client, board, body("t2", "eve", 2))
    later = await post(client, board, body("t2", "eve", 2, ended))
    assert first.status_code == later.status_code == 200
    assert (
        later.json()["standings"][0]["achieved_at"] == first.json()["standings"][0]["achieved_at"]
    )


async def test_a_batch_with_conflicts_refuses_only_those_runs(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board(windows=["all-time", "daily"], policy="sum")
    url = f"/v1/boards/{board}/runs:batch"
    first = [body("b1", "alice", 1), body("b2", "bob", 2)]
    response = await client.post(url, json={"runs": first}, headers=SERVER_H)
    assert all("standings" in r for r in response.json()["results"])
    second = [
        body("b1", "carol", 3),  # b1 was alice's
        body("b2", "bob", 2),  # the same run again
        body("b3", "dave", 4),  # new
        body("b3", "erin", 5),  # b3 was dave's, one line earlier
    ]
    response = await client.post(url, json={"runs": second}, headers=SERVER_H)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["run_id"] for r in results] == ["b1", "b2", "b3", "b3"]
    assert [r.get("error", {}).get("code") for r in results] == [
        "run_conflict",
        None,
        None,
        "run_conflict",
    ]
    assert "standings" not in results[0] and "standings" in results[1]
    assert sorted(await top(client, board)) == [("alice", 1), ("bob", 2), ("dave", 4)]
    await assert_stores_agree(client, runtime, redis, pg, board)


async def test_concurrent_conflicting_sends_have_exactly_one_winner(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board(windows=["all-time", "daily"], policy="sum")
    players = [f"p{i}" for i in range(12)]
    responses = await asyncio.gather(
        *(post(client, board, body("race", p, 10 + i)) for i, p in enumerate(players))
    )
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == 1 and statuses.count(409) == len(players) - 1
    winner = players[statuses.index(200)]
    assert [p for p, _ in await top(client, board)] == [winner]
    await assert_stores_agree(client, runtime, redis, pg, board)


async def forget_registry(redis: Redis, board: str) -> None:
    """What a Redis that lost the board's registry (flushed, restarted) holds of it."""
    found = [k async for k in redis.scan_iter(match=f"rk:{{{board}}}:ids*")]
    assert found
    await redis.delete(*found)


async def test_a_lost_registry_is_restored_from_postgresql(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board(windows=["all-time", "daily"], policy="sum")
    assert (await post(client, board, body("k1", "alice", 10))).status_code == 200
    await wait_consumer_idle(client, runtime)
    await forget_registry(redis, board)
    assert_error(await post(client, board, body("k1", "bob", 20)), 409, "run_conflict")
    assert await redis.exists(keys.run_ids_armed(board))
    # a whole rebuild after a Redis restart disarms every board's registry the same way
    await runtime.redis.admission.disarm_run_ids([board])
    assert_error(await post(client, board, body("k1", "bob", 20)), 409, "run_conflict")
    assert (await post(client, board, body("k1", "alice", 10))).status_code == 200
    await assert_stores_agree(client, runtime, redis, pg, board)


async def test_a_restored_registry_still_compares_ended_at_when_both_sends_carry_one(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    board = await make_board()
    ended = datetime.now(UTC) - timedelta(seconds=30)
    assert (await post(client, board, body("e1", "eve", 3, ended))).status_code == 200
    first = await post(client, board, body("e2", "eve", 2))  # ended_at defaulted
    assert first.status_code == 200
    await wait_consumer_idle(client, runtime)
    await forget_registry(redis, board)  # a wiped Redis
    moved = body("e1", "eve", 3, ended - timedelta(seconds=1))
    assert_error(await post(client, board, moved), 409, "run_conflict")
    assert (await post(client, board, body("e1", "eve", 3, ended))).status_code == 200
    # first sent without ended_at: still not compared, still its first receipt's time
    later = await post(client, board, body("e2", "eve", 2, ended))
    assert later.status_code == 200, later.text
    assert (
        later.json()["standings"][0]["achieved_at"] == first.json()["standings"][0]["achieved_at"]
    )
    await assert_stores_agree(client, runtime, redis, pg, board)


async def test_a_lost_registry_takes_the_runs_the_consumer_has_not_applied_from_the_log(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    """Restoring reads the log after the consumer's ack floor. A consumer that does not
    exist yet has applied nothing, so the whole log is the tail: the run is found there
    though PostgreSQL no longer has it."""
    board = await make_board(policy="sum")
    assert (await post(client, board, body("tail-1", "alice", 10))).status_code == 200
    await wait_consumer_idle(client, runtime)
    await pg.execute("DELETE FROM run_fingerprints WHERE board_id = %s", (board,))
    await forget_registry(redis, board)
    fresh = RunIds(
        runtime.redis.admission, runtime.pg, runtime.runlog, durable="rankd-test-no-consumer"
    )
    assert await fresh.restore(board) >= 1
    run = Run("tail-1", "bob", 20, 0, 0, ended_given=False)
    run.received_at_ms = run.ended_at_ms = int(datetime.now(UTC).timestamp() * 1000)
    [conflict] = await fresh.claim(board, [run])
    assert conflict is not None and conflict.code == "run_conflict"


async def test_the_consumer_applies_only_the_first_content_of_a_run_id(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    """Should conflicting content reach the log (a registry lost between a claim and its
    restore), the consumer keeps the first in log order, in Redis and PostgreSQL alike."""
    board = await make_board(windows=["all-time", "daily"], policy="sum")
    now = int(datetime.now(UTC).timestamp() * 1000)
    for player, score in (("alice", 10), ("bob", 20)):
        payload = encode_message(board, [Run("dup", player, score, now - 1000, now)])
        await runtime.runlog.publish(board, payload, message_id(board, payload))
    await wait_consumer_idle(client, runtime)
    assert await top(client, board) == [("alice", 10)]
    await assert_stores_agree(client, runtime, redis, pg, board)
    cur = await pg.execute(
        "SELECT player_id, score FROM run_fingerprints WHERE board_id = %s", (board,)
    )
    assert await cur.fetchall() == [("alice", 10)]


async def test_a_resent_rejected_run_does_not_return_to_review(
    client: httpx.AsyncClient, redis: Redis, make_board: MakeBoard
) -> None:
    board = await make_board(hold_top=1)
    held = await post(client, board, body("h1", "mallory", 900))
    assert held.json()["standings"][0]["status"] == "held"
    assert (await client.post(f"/v1/boards/{board}/holds/h1/reject", headers=ADMIN_H)).is_success
    again = await post(client, board, body("h1", "mallory", 900))
    assert again.status_code == 200
    # the decision stands: the run counts nowhere and waits for no review
    assert again.json()["standings"][0]["status"] == "closed"
    holds = await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)
    assert holds.json()["holds"] == []
    period = again.json()["standings"][0]["period"]
    pending = keys.period_keys(board, "all-time", period).pending
    assert await redis.zcard(pending) == 0
    assert await top(client, board) == []


async def test_an_approved_run_id_reused_by_another_player_is_a_conflict(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(hold_top=1)
    await post(client, board, body("a1", "alice", 900))
    assert (await client.post(f"/v1/boards/{board}/holds/a1/approve", headers=ADMIN_H)).is_success
    assert_error(await post(client, board, body("a1", "bob", 950)), 409, "run_conflict")
    holds = await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)
    assert holds.json()["holds"] == []
    assert await top(client, board) == [("alice", 900)]


async def test_the_registry_forgets_after_its_memory(
    runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    """Memory is bounded: each bucket expires, a run is remembered memory_s to 1.25x."""
    board = await make_board()
    run_ids = RunIds(runtime.redis.admission, runtime.pg, runtime.runlog, memory_s=4.0)
    now = int(datetime.now(UTC).timestamp() * 1000)
    [ok] = await run_ids.claim(board, [Run("f1", "alice", 1, now, now)])
    assert ok is None
    ttls = [await redis.ttl(keys.run_ids(board, b)) for b in run_ids.buckets(now)[:1]]
    assert 0 < ttls[0] <= 6

    async def forgotten() -> bool:
        t = int(datetime.now(UTC).timestamp() * 1000)
        [c] = await run_ids.claim(board, [Run("f1", "bob", 2, t, t)])
        return c is None

    assert not await forgotten()
    assert await wait_until(forgotten, timeout_s=8.0, step_s=0.5)


async def test_redis_is_healed_when_a_conflicting_run_reached_it(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    make_board: MakeBoard,
) -> None:
    """A registry lost between a claim and its restore could let a submitter log and apply a
    conflicting run; the consumer applies it nowhere and rebuilds its periods from
    PostgreSQL, so Redis agrees again."""
    board_id = await make_board(windows=["all-time", "daily"], policy="sum")
    assert (await post(client, board_id, body("heal-1", "alice", 10))).status_code == 200
    await wait_consumer_idle(client, runtime)
    board = await runtime.boards.get(board_id)
    now = int(datetime.now(UTC).timestamp() * 1000)
    bob = Run("heal-1", "bob", 20, now - 1000, now)
    payload = encode_message(board_id, [bob])
    await runtime.runlog.publish(board_id, payload, message_id(board_id, payload))
    await runtime.submitter.apply(board, [bob])  # as its submitter would have
    assert ("bob", 20) in await top(client, board_id)

    async def healed() -> bool:
        # while the heal rebuilds the period, reads of it answer 503 (by design): not yet
        response = await client.get(f"/v1/boards/{board_id}/top", params={"n": 100})
        if response.status_code == 503:
            return False
        assert response.status_code == 200, response.text
        entries = response.json()["entries"]
        return [(e["player_id"], e["score"]) for e in entries] == [("alice", 10)]

    assert await wait_until(healed, timeout_s=15.0, step_s=0.25)
    await assert_stores_agree(client, runtime, redis, pg, board_id)
