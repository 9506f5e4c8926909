"""The ``rolling-7d`` window (CONTRACT v1.3): the last seven UTC days, today included, in one
period ``current``; a run counts if it ended on one of them when it came, and leaves when its
day is seven days old. Against a model, on 1 and 4 shards: the submit answers, the reads,
the durable copy, a day leaving (the season job's pass at a later time), a ban, a Redis
rebuild and a replay (which brings old days back until the next pass)."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.periods import DAY_MS
from rankd.runtime import Runtime
from rankd.services import rolling
from rankd.services.replay import replay
from rankd.stores import rolling as stores_rolling
from rankd.stores.redis import keys
from tests.integration.services.test_admin import ban
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wipe_board


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


def model(runs: list[dict[str, Any]], first_day: int, received_day: int) -> list[tuple[str, int]]:
    """(player, score) best first: each player's best run that ended on a day from
    ``first_day`` on, among those counted when they came (ended within the seven days up to
    ``received_day``)."""
    held: dict[str, dict[str, Any]] = {}
    for run in runs:
        day = run["ended_ms"] // DAY_MS
        if day < first_day or day < received_day - 6:
            continue
        mine = held.get(run["player_id"])
        if mine is None or (run["score"], -run["ended_ms"]) > (mine["score"], -mine["ended_ms"]):
            held[run["player_id"]] = run
    ordered = sorted(held.values(), key=lambda r: (-r["score"], r["ended_ms"]))
    return [(r["player_id"], r["score"]) for r in ordered]


async def standing(client: httpx.AsyncClient, board: str) -> list[tuple[str, int]]:
    page = await client.get(f"/v1/boards/{board}/top", params={"n": 100, "window": "rolling-7d"})
    assert page.status_code == 200, page.text
    assert page.json()["period"] == "current"
    return [(e["player_id"], e["score"]) for e in page.json()["entries"]]


async def durable(pg: AsyncConnection[Any], board: str) -> list[tuple[str, int]]:
    cur = await pg.execute(
        "SELECT player_id, score FROM player_best WHERE board_id = %s AND win = 'rolling-7d'"
        " AND period = 'current' AND segment = '' ORDER BY score DESC, achieved_ms",
        (board,),
    )
    return [(p, s) for p, s in await cur.fetchall()]


async def test_days_leave_the_rolling_window_in_every_store(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(windows=["all-time", "rolling-7d"])
    config = await runtime.boards.reload(board)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    today = now_ms // DAY_MS
    rng = random.Random(7)
    players = [new_board_id("rw") for _ in range(10)]
    runs: list[dict[str, Any]] = []
    for i in range(80):
        # from nine days ago to now: the two oldest days never count
        ended_ms = now_ms - rng.randrange(9 * 24) * 3_600_000 - rng.randrange(3_600_000)
        runs.append(
            {
                "run_id": f"r{i:03d}",
                "player_id": rng.choice(players),
                "score": rng.randrange(1000),
                "ended_ms": ended_ms,
            }
        )

    async def send(run: dict[str, Any]) -> dict[str, Any]:
        ended = datetime.fromtimestamp(run["ended_ms"] / 1000, UTC)
        body = {k: v for k, v in run.items() if k != "ended_ms"} | {"ended_at": ended.isoformat()}
        response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    for chunk in range(0, len(runs), 10):
        answers = await asyncio.gather(*(send(r) for r in runs[chunk : chunk + 10]))
        for run, answer in zip(runs[chunk : chunk + 10], answers, strict=True):
            [mine] = [s for s in answer["standings"] if s["window"] == "rolling-7d"]
            assert mine["period"] == "current"
            counted = run["ended_ms"] // DAY_MS >= today - 6
            assert mine["status"] == ("ranked" if counted else "closed"), (run, mine)
    expected = model(runs, today - 6, today)
    assert await standing(client, board) == expected
    listed = (
        await client.get(f"/v1/boards/{board}/periods", params={"window": "rolling-7d"})
    ).json()
    [current] = listed["periods"]
    assert current["period"] == "current" and current["status"] == "open"
    assert current["starts_at"].startswith(
        datetime.fromtimestamp((today - 6) * 86_400, UTC).date().isoformat()
    )
    await wait_consumer_idle(client, runtime)
    assert await durable(pg, board) == expected

    # three days later: three more days have left; a day that holds no best changes nothing
    later = now_ms + 3 * DAY_MS
    rolled = await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later)
    assert rolled is not None and rolled.first_day == today - 3
    after = model(runs, today - 3, today)
    assert after != expected  # the seed leaves some entries to fall
    assert await standing(client, board) == after
    assert await durable(pg, board) == after
    assert (
        await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later) is None
    )  # done
    # a player's own rank, and the all-time window untouched
    top = await client.get(f"/v1/boards/{board}/top", params={"n": 100})
    assert len(top.json()["entries"]) == len({r["player_id"] for r in runs})

    # a ban hides the player's recomputed entry; the unban shows it again
    banned = after[0][0]
    try:
        await ban(client, banned)
        await asyncio.sleep(0.3)
        assert await standing(client, board) == after[1:]
    finally:
        await ban(client, banned, False)
    await asyncio.sleep(0.3)
    assert await standing(client, board) == after

    # Redis lost: rebuilt from the durable copy as it was rolled
    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    assert await standing(client, board) == after
    # a replay into an empty Redis applies every run as it came (counted then), bringing
    # back the days that left; the next pass rolls them out again
    await wipe_board(redis, board)
    await replay(runtime.runlog, runtime.applier, first)
    await wait_consumer_idle(client, runtime)
    assert await standing(client, board) == expected
    again = await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later)
    assert again is not None and again.changed > 0
    assert await standing(client, board) == after
    assert await durable(pg, board) == after

    # an admin's removal takes the entry and its days: no later day change brings it back
    gone = after[0][0]
    removed = await client.delete(
        f"/v1/boards/{board}/entries/{gone}", params={"window": "rolling-7d"}, headers=ADMIN_H
    )
    assert removed.status_code == 200, removed.text
    assert await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later + DAY_MS)
    last = [e for e in model(runs, today - 2, today) if e[0] != gone]
    assert await standing(client, board) == last
    assert await durable(pg, board) == last


async def test_a_rolling_window_keeps_best_entries_only(client: httpx.AsyncClient) -> None:
    board = new_board_id("rw-policy")
    body: dict[str, Any]
    for body in (
        {"windows": ["rolling-7d"], "policy": "sum"},
        {"windows": ["all-time", "rolling-7d"], "window_policies": {"rolling-7d": "latest"}},
    ):
        response = await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)
        assert response.status_code == 400, response.text
        assert "rolling-7d window keeps best entries only" in response.text, response.text
    assert (await client.get(f"/v1/boards/{board}")).status_code == 404
    # a sum board may rank the last seven days by best
    body = {
        "windows": ["all-time", "rolling-7d"],
        "policy": "sum",
        "window_policies": {"rolling-7d": "best"},
    }
    response = await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    # its one period never closes, and no other period exists
    closed = await client.post(
        f"/v1/boards/{board}/periods/current/close",
        params={"window": "rolling-7d"},
        headers=ADMIN_H,
    )
    assert closed.status_code == 400 and "never closes" in closed.text, closed.text
    other = await client.get(
        f"/v1/boards/{board}/top", params={"window": "rolling-7d", "period": "2026-12-01"}
    )
    assert other.status_code == 400 and "only the period 'current'" in other.text, other.text


async def test_a_pass_that_died_before_its_rebuild_is_finished_by_the_next(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    board = await make_board(windows=["rolling-7d"])
    config = await runtime.boards.reload(board)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    for i, (days_ago, score) in enumerate([(5, 900), (1, 300), (0, 500)]):
        ended = datetime.fromtimestamp((now_ms - days_ago * DAY_MS) / 1000, UTC)
        body = {"run_id": f"d{i}", "player_id": f"dp{i % 2}", "score": score}
        body["ended_at"] = ended.isoformat()
        response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200, response.text
    await wait_consumer_idle(client, runtime)
    assert await standing(client, board) == [("dp0", 900), ("dp1", 300)]
    # the first half of a pass three days on: the durable copy rolled, then the process died
    later = now_ms + 3 * DAY_MS
    first = (later // DAY_MS) - 6
    async with runtime.pg.apply_lock(exclusive=True) as conn:
        assert len((await stores_rolling.roll(conn, board, first)).gone) == 1
        await stores_rolling.record(conn, board, pg_day=first, redis_day=-1)
    assert await standing(client, board) == [("dp0", 900), ("dp1", 300)]  # Redis: not yet
    rolled = await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later)
    assert rolled is not None and rolled.rebuilt and rolled.changed == 0
    assert await standing(client, board) == [("dp0", 500), ("dp1", 300)]
    assert await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later) is None


async def test_a_day_leaving_takes_its_shadow_entries_metadata_and_times_and_says_so(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, redis: Redis
) -> None:
    board = await make_board(windows=["rolling-7d"])
    config = await runtime.boards.reload(board)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    gone, stays, banned = new_board_id("rg"), new_board_id("rs"), new_board_id("rb")
    for i, (player, days_ago, score) in enumerate(
        [(gone, 5, 900), (stays, 5, 800), (stays, 0, 100), (banned, 5, 950)]
    ):
        ended = datetime.fromtimestamp((now_ms - days_ago * DAY_MS) / 1000, UTC)
        body = {"run_id": f"x{i}", "player_id": player, "score": score, "metadata": {"i": i}}
        body["ended_at"] = ended.isoformat()
        response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200, response.text
    try:
        await ban(client, banned)
        await wait_consumer_idle(client, runtime)
        assert await standing(client, board) == [(gone, 900), (stays, 800)]
        notices = redis.pubsub(ignore_subscribe_messages=True)
        await notices.subscribe(keys.CHANGES)
        later = now_ms + 3 * DAY_MS
        rolled = await rolling.roll(runtime.pg, runtime.redis, runtime.rebuilder, config, later)
        assert rolled is not None and rolled.changed == 3
        # every instance's live streams are told to read again
        told = None
        for _ in range(50):  # the subscription's own confirmation reads as None first
            told = told or await notices.get_message(timeout=0.1)
        await notices.aclose()
        assert told is not None and told["channel"] == keys.CHANGES.encode()
        assert await standing(client, board) == [(stays, 100)]
    finally:
        await ban(client, banned, False)
    # the banned player's departed entry did not wait on :shadow to be published by the unban
    await asyncio.sleep(0.3)
    assert await standing(client, board) == [(stays, 100)]
    # nothing of the departed entries is left beside the board: metadata, times
    leftovers: list[bytes] = []
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            kind = await redis.type(key)
            if kind == b"hash":
                fields: list[bytes] = await redis.hkeys(key)  # type: ignore[assignment]
                leftovers += [f for f in fields if f != b"#"]
    assert not [f for f in leftovers if gone.encode() in f or banned.encode() in f], leftovers
    assert stays.encode() in leftovers  # the kept entry's time (its metadata: its member)
    assert [f for f in leftovers if f.endswith(stays.encode()) and f != stays.encode()]
