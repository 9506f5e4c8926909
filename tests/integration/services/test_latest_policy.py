"""The ``latest`` policy (CONTRACT v1.3): a player's entry is their run with the latest
``ended_at`` (ties: the greater ``run_id``), ranked by its score, so resends and any order
converge; in Redis and the durable copy alike, after a ban and an unban, a rebuild and a
replay. Against a model, on 1 and 4 shards, with ``window_policies`` mixing it with best."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.runtime import Runtime
from rankd.services.replay import replay
from tests.integration.services.test_admin import ban
from tests.support.common import SERVER_H, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wipe_board


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


def model(runs: list[dict[str, Any]], policy: str) -> list[tuple[str, int]]:
    """(player, score) best first, as the contract says the board stands."""
    held: dict[str, dict[str, Any]] = {}
    for run in runs:
        mine = held.get(run["player_id"])
        if policy == "latest":
            key = (run["ended_ms"], run["run_id"].encode())
            if mine is None or key > (mine["ended_ms"], mine["run_id"].encode()):
                held[run["player_id"]] = run
        elif mine is None or (run["score"], -run["ended_ms"]) > (
            mine["score"],
            -mine["ended_ms"],
        ):
            held[run["player_id"]] = run
    ordered = sorted(held.values(), key=lambda r: (-r["score"], r["ended_ms"]))
    return [(r["player_id"], r["score"]) for r in ordered]


async def standing(
    client: httpx.AsyncClient, board: str, window: str, period: str | None = None
) -> list[tuple[str, int]]:
    params: dict[str, Any] = {"n": 100, "window": window}
    if period is not None:
        params["period"] = period
    page = await client.get(f"/v1/boards/{board}/top", params=params)
    assert page.status_code == 200, page.text
    return [(e["player_id"], e["score"]) for e in page.json()["entries"]]


async def test_the_latest_run_holds_the_entry_whatever_the_order(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(
        windows=["all-time", "daily"], policy="latest", window_policies={"daily": "best"}
    )
    rng = random.Random(5)
    # every run ends in today's daily period, read by its id: just after midnight the runs
    # end after it, and the test waits until the last has ended
    now = datetime.now(UTC)
    base = max(now - timedelta(minutes=30), now.replace(hour=0, minute=0, second=0, microsecond=0))
    await asyncio.sleep(max(0.0, (base + timedelta(seconds=41) - now).total_seconds()))
    periods = {"all-time": None, "daily": base.strftime("%Y-%m-%d")}
    players = [new_board_id("lp") for _ in range(8)]
    runs: list[dict[str, Any]] = []
    for i in range(120):
        # ends on a coarse grid, so some runs of one player end in the same ms
        ended_ms = int(base.timestamp() * 1000) + rng.randrange(40) * 1000
        run_id = f"{rng.choice('abcdef')}{i:03d}"
        runs.append(
            {
                "run_id": run_id,
                "player_id": rng.choice(players),
                "score": rng.randrange(1000),
                "ended_ms": ended_ms,
            }
        )
    sent = runs + rng.sample(runs, 30)  # resends, out of order
    rng.shuffle(sent)

    async def send(run: dict[str, Any]) -> dict[str, Any]:
        ended = datetime.fromtimestamp(run["ended_ms"] / 1000, UTC)
        body = {k: v for k, v in run.items() if k != "ended_ms"} | {"ended_at": ended.isoformat()}
        response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    for chunk in range(0, len(sent), 10):  # concurrent submits, ten at a time
        answers = await asyncio.gather(*(send(r) for r in sent[chunk : chunk + 10]))
        for answer in answers:
            [latest] = [s for s in answer["standings"] if s["window"] == "all-time"]
            assert latest["status"] == "ranked"
    expected = {"all-time": model(runs, "latest"), "daily": model(runs, "best")}
    assert {w: await standing(client, board, w, periods[w]) for w in expected} == expected

    # the answer of a run that does not hold the entry says so; a resend of the holder: mine
    holder = max(
        (r for r in runs if r["player_id"] == players[0]),
        key=lambda r: (r["ended_ms"], r["run_id"].encode()),
    )
    again = await send(holder)
    [latest] = [s for s in again["standings"] if s["window"] == "all-time"]
    assert (latest["improved"], latest["is_best"], latest["score"]) == (
        False,
        True,
        holder["score"],
    )

    await wait_consumer_idle(client, runtime)
    cur = await pg.execute(
        "SELECT player_id, score FROM player_best WHERE board_id = %s AND win = 'all-time'"
        " AND segment = ''",
        (board,),
    )
    assert sorted(await cur.fetchall()) == sorted(expected["all-time"])

    # a ban and an unban move the entries and keep the latest one
    try:
        await ban(client, players[1])
        await asyncio.sleep(0.3)
        shown = [e for e in expected["all-time"] if e[0] != players[1]]
        assert await standing(client, board, "all-time") == shown
        for run in [r for r in runs if r["player_id"] == players[1]][:3]:
            await send(run)
    finally:
        await ban(client, players[1], False)
    await asyncio.sleep(0.3)
    assert {w: await standing(client, board, w, periods[w]) for w in expected} == expected

    await wait_consumer_idle(client, runtime)
    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    assert {w: await standing(client, board, w, periods[w]) for w in expected} == expected
    # after the rebuild, ties at one ms still go to the greater run id
    for run in runs[:40]:
        await send(run)
    assert {w: await standing(client, board, w, periods[w]) for w in expected} == expected
    await wipe_board(redis, board)
    await replay(runtime.runlog, runtime.applier, first)
    assert {w: await standing(client, board, w, periods[w]) for w in expected} == expected
