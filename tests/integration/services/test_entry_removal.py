"""Removing one player's entry from one period (CONTRACT v1.3, an admin's correction):
gone from every read of that period, its segments included, and from the durable copy;
the other windows untouched; a resend of a removed run counts nowhere there, not after a
rebuild nor a replay; a run that ends later counts again. On 1 and 4 shards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection

from rankd.runtime import Runtime
from rankd.services.replay import replay
from tests.integration.services.test_admin import freeze
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.durable import during_second_sweep, wait_consumer_idle
from tests.support.wire import assert_error


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


async def send(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int, ended: datetime
) -> dict[str, Any]:
    body = {
        "run_id": run_id,
        "player_id": player,
        "score": score,
        "ended_at": ended.isoformat(),
        "segments": {"country": "FR"},
    }
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def ranked(client: httpx.AsyncClient, board: str, **params: str) -> list[tuple[str, int]]:
    page = await client.get(f"/v1/boards/{board}/top", params=params)
    assert page.status_code == 200, page.text
    return [(e["player_id"], e["score"]) for e in page.json()["entries"]]


async def test_a_removed_entry_is_gone_for_good_and_later_runs_count_again(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(windows=["weekly", "all-time"], segments=["country"])
    now = datetime.now(UTC) - timedelta(seconds=5)
    await send(client, board, "a1", "p1", 90, now)
    await send(client, board, "a2", "p2", 50, now)
    await send(client, board, "a3", "p3", 70, now)
    # a removal waits 5 s for the consumer to apply earlier runs, then answers 503; a loaded
    # machine running the whole suite can take longer, which is not what is tested here
    await wait_consumer_idle(client, runtime, within_s=60)
    path = f"/v1/boards/{board}/entries/p1"
    # admins only; bad input changes nothing
    assert_error(await client.delete(path), 401, "unauthorized")
    assert_error(await client.delete(path, headers=SERVER_H), 403, "forbidden")
    for params in ({"window": "yearly"}, {"window": "daily"}, {"period": "2026-W99"}):
        assert_error(
            await client.delete(path, params=params, headers=ADMIN_H), 400, "invalid_request"
        )
    assert_error(
        await client.delete(f"/v1/boards/{board}/entries/nobody", headers=ADMIN_H),
        404,
        "player_not_ranked",
    )
    assert_error(
        await client.delete("/v1/boards/no-such-board/entries/p1", headers=ADMIN_H),
        404,
        "board_not_found",
    )
    assert await ranked(client, board) == [("p1", 90), ("p3", 70), ("p2", 50)]

    response = await client.delete(path, headers=ADMIN_H)  # the default window's current week
    assert response.status_code == 200, response.text
    week = response.json()["period"]
    assert response.json() == {
        "board_id": board,
        "player_id": "p1",
        "window": "weekly",
        "period": week,
        "removed": True,
    }
    weekly = [("p3", 70), ("p2", 50)]
    assert await ranked(client, board) == weekly
    assert await ranked(client, board, segment="country:FR") == weekly
    assert await ranked(client, board, window="all-time") == [("p1", 90), ("p3", 70), ("p2", 50)]
    player = await client.get(f"/v1/boards/{board}/players/p1")
    assert_error(player, 404, "player_not_ranked")
    cur = await pg.execute(
        "SELECT win FROM player_best WHERE board_id = %s AND player_id = 'p1'", (board,)
    )
    assert sorted(r[0] for r in await cur.fetchall()) == ["all-time", "all-time"]

    # a resend of the removed run counts nowhere in that week; a new run that ended
    # before the removal neither; the all-time entry is untouched
    again = await send(client, board, "a1", "p1", 90, now)
    assert {s["window"]: s["status"] for s in again["standings"] if s["segment"] is None} == {
        "weekly": "closed",
        "all-time": "ranked",
    }
    await send(client, board, "a4", "p1", 95, now)
    assert await ranked(client, board) == weekly
    # past the second sweep, after a rebuild and a whole replay: the same
    await asyncio.sleep(runtime.deletions.settle_s + 0.5)
    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board)
    assert await ranked(client, board) == weekly
    await replay(runtime.runlog, runtime.applier, first)
    assert await ranked(client, board) == weekly
    assert await ranked(client, board, segment="country:FR") == weekly
    assert await ranked(client, board, window="all-time") == [("p1", 95), ("p3", 70), ("p2", 50)]

    # a run that ends after the removal counts again, as a new entry
    await asyncio.sleep(0.05)
    await send(client, board, "a5", "p1", 10, datetime.now(UTC))
    assert await ranked(client, board) == [*weekly, ("p1", 10)]
    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board)
    assert await ranked(client, board) == [*weekly, ("p1", 10)]


async def test_a_removal_from_an_archived_period_closes_the_ranks_up(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    board = await make_board(
        windows=["daily", "all-time"], grace_seconds=86_400, segments=["country"]
    )
    yesterday = datetime.now(UTC) - timedelta(days=1)
    for n, score in enumerate((30, 20, 10)):
        await send(client, board, f"y{n}", f"p{n}", score, yesterday)
    day = yesterday.strftime("%Y-%m-%d")
    await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
    await wait_consumer_idle(client, runtime)
    await freeze(runtime, board)
    top = await client.get(f"/v1/boards/{board}/top", params={"window": "daily", "period": day})
    assert [(e["rank"], e["player_id"]) for e in top.json()["entries"]] == [
        (1, "p0"),
        (2, "p1"),
        (3, "p2"),
    ]
    response = await client.delete(
        f"/v1/boards/{board}/entries/p0",
        params={"window": "daily", "period": day},
        headers=ADMIN_H,
    )
    assert response.status_code == 200, response.text
    page = (
        await client.get(f"/v1/boards/{board}/top", params={"window": "daily", "period": day})
    ).json()
    assert [(e["rank"], e["player_id"]) for e in page["entries"]] == [(1, "p1"), (2, "p2")]
    assert page["total"] == 2
    # the all-time window keeps the run
    all_time = (await client.get(f"/v1/boards/{board}/top?window=all-time")).json()["entries"]
    assert [e["player_id"] for e in all_time] == ["p0", "p1", "p2"]


async def test_a_board_created_again_keeps_no_removal_of_the_old_one(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["all-time"], segments=["country"])
    now = datetime.now(UTC) - timedelta(seconds=5)
    await send(client, board, "o1", "p1", 40, now)
    await wait_consumer_idle(client, runtime, within_s=60)  # as in the first test
    removed = await client.delete(f"/v1/boards/{board}/entries/p1", headers=ADMIN_H)
    assert removed.status_code == 200, removed.text
    assert (await client.delete(f"/v1/boards/{board}", headers=ADMIN_H)).status_code == 200
    config = {"windows": ["all-time"], "segments": ["country"]}
    created = await client.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
    assert created.status_code == 201, created.text
    await send(client, board, "n1", "p1", 30, now)  # ended before the old board's removal
    assert await ranked(client, board) == [("p1", 30)]


async def test_a_later_run_during_the_removals_second_sweep_is_kept(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    """A run that ends after the removal, sent between the second sweep's read of the
    durable copy and its drop from Redis, keeps its entry (as the erasure's sweep,
    test_admin.py says how it was lost)."""
    board = await make_board(windows=["all-time"], segments=["country"])
    before = datetime.now(UTC) - timedelta(seconds=5)
    await send(client, board, "a1", "p1", 90, before)
    await send(client, board, "a2", "p2", 50, before)
    await wait_consumer_idle(client, runtime)

    async def remove() -> None:
        response = await client.delete(f"/v1/boards/{board}/entries/p1", headers=ADMIN_H)
        assert response.status_code == 200, response.text

    async def new_run() -> None:
        await send(client, board, "a3", "p1", 30, datetime.now(UTC))

    async def committed() -> bool:
        cur = await pg.execute(
            "SELECT count(*) FROM player_best WHERE board_id = %s AND player_id = 'p1'"
            " AND segment = ''",
            (board,),
        )
        return await cur.fetchone() == (1,)

    corrections = runtime.deletions.corrections
    sweeps = await during_second_sweep(
        runtime, corrections, "p1", act=remove, new_run=new_run, committed=committed
    )
    assert sweeps == [False]  # the consumer waited for the sweep
    await wait_consumer_idle(client, runtime)
    assert await ranked(client, board) == [("p2", 50), ("p1", 30)]
    assert await ranked(client, board, segment="country:FR") == [("p2", 50), ("p1", 30)]
