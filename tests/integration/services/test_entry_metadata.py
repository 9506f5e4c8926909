"""Entry metadata (CONTRACT v1.3): a run's JSON object kept with the entry it holds, returned
by the reads that ask (include=metadata), through every path an entry takes: a better run
replaces it, a worse one leaves it, a sum board keeps its latest counted run's; bans, holds,
rebuild, replay, the archive, erasure and an admin's removal. On 1 and 4 shards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.stores.redis import keys
from tests.integration.services.test_admin import ban, freeze
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wipe_board
from tests.support.wire import assert_error


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


async def send(
    client: httpx.AsyncClient,
    board: str,
    run_id: str,
    player: str,
    score: int,
    metadata: dict[str, Any] | None = None,
    ended: datetime | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"run_id": run_id, "player_id": player, "score": score}
    if metadata is not None:
        body["metadata"] = metadata
    if ended is not None:
        body["ended_at"] = ended.isoformat()
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def metas(
    client: httpx.AsyncClient, board: str, path: str = "top", **params: str
) -> dict[str, Any]:
    """player -> metadata of every entry a read shows with include=metadata."""
    response = await client.get(
        f"/v1/boards/{board}/{path}", params={**params, "include": "metadata"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    if "entries" not in body:
        return {body["player_id"]: body["metadata"]}
    return {e["player_id"]: e["metadata"] for e in body["entries"]}


async def test_bad_metadata_is_400_and_stores_nothing(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    bad: list[object] = [
        "red",
        ["red"],
        7,
        {f"k{i}": i for i in range(17)},
        {"blob": "x" * 1100},
    ]
    for metadata in bad:
        run = {"run_id": "r1", "player_id": "p1", "score": 5, "metadata": metadata}
        response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert_error(response, 400, "invalid_request")
        batch = await client.post(
            f"/v1/boards/{board}/runs:batch", json={"runs": [run]}, headers=SERVER_H
        )
        assert batch.json()["results"][0]["error"]["code"] == "invalid_request"
    assert (await client.get(f"/v1/boards/{board}/top")).json()["entries"] == []
    # the bounds themselves are taken: 16 keys, 1,024 bytes encoded
    most = {f"k{i:02d}": "v" for i in range(16)}
    await send(client, board, "r1", "p1", 5, most)
    exact = {"blob": "x" * (1024 - len('{"blob":""}'))}
    await send(client, board, "r2", "p2", 5, exact)
    # a number past 64 bits is a JSON number all the same: kept as a double, as a browser
    # would read it
    await send(client, board, "r3", "p3", 5, {"big": 2**70})
    assert await metas(client, board) == {"p1": most, "p2": exact, "p3": {"big": 2.0**70}}
    for value in ("metadata,x", "names", ""):
        assert_error(
            await client.get(f"/v1/boards/{board}/top", params={"include": value}),
            400,
            "invalid_request",
        )


async def test_every_read_that_asks_gets_the_metadata_of_the_run_holding_the_entry(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["all-time"], segments=["country"])
    car = {"car": "red-7", "laps": [61.2, 60.9], "nested": {"ok": True, "none": None}}
    await send(client, board, "a1", "ann", 50, car)
    await send(client, board, "b1", "bob", 40)  # none
    await send(client, board, "c1", "cat", 30, {"car": "blue"})
    # a worse run keeps the entry and its metadata; a better one brings its own (or none)
    await send(client, board, "a2", "ann", 10, {"car": "slow"})
    await send(client, board, "c2", "cat", 35)
    await send(client, board, "b2", "bob", 45, {"car": "green", "é": "ü ✓"})
    expected = {"ann": car, "bob": {"car": "green", "é": "ü ✓"}, "cat": None}
    assert await metas(client, board) == expected
    assert await metas(client, board, "players/ann/around", range="5") == expected
    friends = await metas(client, board, "players/ann/friends", ids="bob,cat,nobody")
    assert friends == expected
    assert await metas(client, board, "players/bob") == {"bob": expected["bob"]}
    page = await client.get(f"/v1/boards/{board}/top", params={"n": "1", "include": "metadata"})
    cursor = page.json()["next_cursor"]
    rest = await client.get(
        f"/v1/boards/{board}/top", params={"cursor": cursor, "include": "metadata"}
    )
    assert [e["metadata"] for e in rest.json()["entries"]] == [expected["bob"], None]
    # a read that does not ask carries none, and a cached top list stays without it
    for path in ("top", "players/ann", "players/ann/around", "players/ann/friends"):
        body = (await client.get(f"/v1/boards/{board}/{path}")).json()
        for entry in body.get("entries", [body]):
            assert "metadata" not in entry
    assert await metas(client, board) == expected


async def test_a_sum_board_keeps_the_latest_counted_runs_metadata(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    board = await make_board(windows=["all-time"], policy="sum")
    now = datetime.now(UTC) - timedelta(seconds=30)
    await send(client, board, "s1", "sam", 5, {"level": 1}, now)
    await send(client, board, "s2", "sam", 5, {"level": 2}, now + timedelta(seconds=2))
    # an older run counts but leaves the latest's metadata
    await send(client, board, "s0", "sam", 5, {"level": 0}, now - timedelta(seconds=2))
    assert await metas(client, board) == {"sam": {"level": 2}}
    await send(client, board, "s3", "sam", 5, None, now + timedelta(seconds=4))
    assert await metas(client, board) == {"sam": None}
    await send(client, board, "t1", "tia", 1, {"level": 9}, now)
    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board)
    assert await metas(client, board) == {"sam": None, "tia": {"level": 9}}


async def test_metadata_survives_a_rebuild_a_replay_and_a_lost_redis(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(windows=["all-time", "daily"], segments=["country"])
    for i in range(30):
        meta = None if i % 3 == 0 else {"run": i, "pad": "x" * (i * 7), "name": "Zoë ✓"}
        body: dict[str, Any] = {"country": "FR" if i % 2 else "DE"}
        run = {"run_id": f"r{i}", "player_id": f"p{i}", "score": i, "segments": body}
        if meta is not None:
            run["metadata"] = meta
        response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert response.status_code == 200, response.text
    reads = [
        {"n": "100"},
        {"n": "100", "window": "daily"},
        {"n": "100", "segment": "country:FR"},
    ]
    before = [await metas(client, board, **params) for params in reads]
    assert before[0]["p4"] == {"run": 4, "pad": "x" * 28, "name": "Zoë ✓"}
    assert before[0]["p3"] is None
    await wait_consumer_idle(client, runtime)
    cur = await pg.execute(
        "SELECT count(*) FROM player_best WHERE board_id = %s AND metadata IS NOT NULL",
        (board,),
    )
    assert (await cur.fetchone()) == (20 * 4,)  # two windows, each global and a segment

    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    assert [await metas(client, board, **params) for params in reads] == before
    await wipe_board(redis, board)
    await replay(runtime.runlog, runtime.applier, first)
    assert [await metas(client, board, **params) for params in reads] == before


async def test_bans_and_holds_keep_an_entrys_metadata(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    board = await make_board(windows=["all-time"], hold_top=1)
    cheat = new_board_id("cheat")
    await send(client, board, "x1", "low", 1, {"who": "low"})  # held: it enters the top 1
    await client.post(f"/v1/boards/{board}/holds/x1/approve", headers=ADMIN_H)
    held = await send(client, board, "h1", cheat, 90, {"who": "fast"})
    assert held["standings"][0]["status"] == "held"
    await send(client, board, "h2", cheat, 80, {"who": "second"})  # waits behind h1
    assert await metas(client, board) == {"low": {"who": "low"}}
    own = await client.get(
        f"/v1/boards/{board}/players/{cheat}",
        params={"viewer": cheat, "include": "metadata"},
        headers=SERVER_H,
    )
    assert own.json()["metadata"] == {"who": "fast"}
    # h2 approved while h1 still waits: h2's own metadata is published
    await client.post(f"/v1/boards/{board}/holds/h2/approve", headers=ADMIN_H)
    assert (await metas(client, board))[cheat] == {"who": "second"}
    await client.post(f"/v1/boards/{board}/holds/h1/approve", headers=ADMIN_H)
    assert (await metas(client, board))[cheat] == {"who": "fast"}
    try:
        await ban(client, cheat)
        await asyncio.sleep(0.3)
        assert cheat not in await metas(client, board)
        viewer = {"viewer": cheat, "include": "metadata"}
        own = await client.get(f"/v1/boards/{board}/top", params=viewer, headers=SERVER_H)
        assert {e["player_id"]: e["metadata"] for e in own.json()["entries"]}[cheat] == {
            "who": "fast"
        }
        await wait_consumer_idle(client, runtime)
        await runtime.rebuilder.rebuild(board=board)
        own = await client.get(f"/v1/boards/{board}/top", params=viewer, headers=SERVER_H)
        assert {e["player_id"]: e["metadata"] for e in own.json()["entries"]}[cheat] == {
            "who": "fast"
        }
    finally:
        await ban(client, cheat, False)
    await asyncio.sleep(0.3)
    assert (await metas(client, board))[cheat] == {"who": "fast"}


async def test_the_archive_keeps_metadata_and_erasure_and_removal_take_it(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    board = await make_board(windows=["daily", "all-time"], grace_seconds=86_400)
    gone, kept = new_board_id("gone"), new_board_id("kept")
    yesterday = datetime.now(UTC) - timedelta(days=1)
    await send(client, board, "y1", gone, 9, {"old": gone}, yesterday)
    await send(client, board, "y2", kept, 8, {"old": kept}, yesterday)
    await send(client, board, "t1", kept, 7, {"new": kept})
    day = yesterday.strftime("%Y-%m-%d")
    await wait_consumer_idle(client, runtime)  # before the grace shrinks: see test_scheduled
    await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
    await freeze(runtime, board)
    archived = await metas(client, board, window="daily", period=day)
    assert archived == {gone: {"old": gone}, kept: {"old": kept}}
    assert await metas(client, board, f"players/{kept}", window="daily", period=day) == {
        kept: {"old": kept}
    }

    response = await client.delete(f"/v1/players/{gone}", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    assert await metas(client, board, window="daily", period=day) == {kept: {"old": kept}}
    assert gone not in await metas(client, board, window="all-time")
    cur = await pg.execute(
        "SELECT count(*) FROM player_best WHERE board_id = %s AND metadata LIKE %s",
        (board, f"%{gone}%"),
    )
    assert (await cur.fetchone()) == (0,)
    # nothing of the erased player's metadata is left in Redis
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            if (await redis.type(key)) == b"hash" and key.endswith(b":meta"):
                assert gone not in str(await redis.hvals(key))

    # an admin's removal takes the entry's metadata with it
    removed = await client.delete(
        f"/v1/boards/{board}/entries/{kept}", params={"window": "all-time"}, headers=ADMIN_H
    )
    assert removed.status_code == 200, removed.text
    async for key in redis.scan_iter(match=f"lb:{{{board}:all-time:*"):
        if key.endswith(b":meta"):
            assert await redis.hlen(key) == 0, key
    assert await metas(client, board) == {kept: {"new": kept}}  # today's entry keeps its own


async def test_a_better_run_in_the_same_millisecond_brings_its_own_metadata_or_none(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, pg: AsyncConnection[Any]
) -> None:
    for policy in ("best", "latest"):
        board = await make_board(windows=["all-time"], policy=policy)
        at = datetime.now(UTC) - timedelta(seconds=3)
        await send(client, board, "a", "ann", 10, {"car": "red"}, at)
        await send(client, board, "b", "ann", 20, None, at)  # same ms, no metadata
        assert await metas(client, board) == {"ann": None}, policy
        await wait_consumer_idle(client, runtime)
        cur = await pg.execute(
            "SELECT score, metadata FROM player_best WHERE board_id = %s", (board,)
        )
        assert await cur.fetchall() == [(20, None)], policy
        await runtime.rebuilder.rebuild(board=board)
        assert await metas(client, board) == {"ann": None}, policy


async def test_an_erasure_takes_a_rejected_holds_metadata_too(
    client: httpx.AsyncClient, make_board: MakeBoard, redis: Redis
) -> None:
    board = await make_board(windows=["all-time"], hold_top=1)
    victim = new_board_id("victim")
    held = await send(client, board, "h1", victim, 50, {"email": "v@example.com"})
    assert held["standings"][0]["status"] == "held"
    rejected = await client.post(f"/v1/boards/{board}/holds/h1/reject", headers=ADMIN_H)
    assert rejected.status_code == 200, rejected.text
    erased = await client.delete(f"/v1/players/{victim}", headers=ADMIN_H)
    assert erased.status_code == 200, erased.text
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            if key.endswith(b":meta"):
                assert victim not in str(await redis.hgetall(key)), key
