"""Closing an open period early (CONTRACT v1.3 period control): runs received after the
close answer closed there and change nothing; the period freezes and archives as if it had
ended; a replay and a rebuild decide the same way. On 1 and 4 shards."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection

from rankd.runtime import Runtime
from rankd.services.replay import replay
from tests.integration.services.test_admin import freeze
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.durable import wait_consumer_idle
from tests.support.wire import assert_error


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


async def send(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int
) -> dict[str, Any]:
    body = {"run_id": run_id, "player_id": player, "score": score}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def weekly(client: httpx.AsyncClient, board: str, week: str) -> list[tuple[str, int]]:
    page = await client.get(f"/v1/boards/{board}/top", params={"window": "weekly", "period": week})
    assert page.status_code == 200, page.text
    return [(e["player_id"], e["score"]) for e in page.json()["entries"]]


async def test_a_closed_period_takes_no_more_runs_and_freezes_as_if_it_had_ended(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(windows=["weekly", "all-time"])
    await send(client, board, "c1", "p1", 30)
    await send(client, board, "c2", "p2", 20)
    week = (await client.get(f"/v1/boards/{board}/periods", params={"window": "weekly"})).json()
    [current] = [p["period"] for p in week["periods"] if p["status"] == "open"]
    close = f"/v1/boards/{board}/periods/{current}/close"
    # admins only; bad input changes nothing
    assert_error(await client.post(close), 401, "unauthorized")
    assert_error(await client.post(close, headers=SERVER_H), 403, "forbidden")
    for params in ({"window": "all-time"}, {"window": "daily"}, {"window": "yearly"}):
        assert_error(
            await client.post(close, params=params, headers=ADMIN_H), 400, "invalid_request"
        )
    next_week = (datetime.now(UTC) + timedelta(days=7)).strftime("%G-W%V")
    for bad in (next_week, "2026-W99", "2026-11-03"):
        response = await client.post(
            f"/v1/boards/{board}/periods/{bad}/close", params={"window": "weekly"}, headers=ADMIN_H
        )
        assert_error(response, 400, "invalid_request")
    assert_error(
        await client.post(f"/v1/boards/no-such/periods/{current}/close", headers=ADMIN_H),
        404,
        "board_not_found",
    )

    closed = await client.post(close, params={"window": "weekly"}, headers=ADMIN_H)
    assert closed.status_code == 200, closed.text
    body = closed.json()
    assert (body["window"], body["period"], body["status"]) == ("weekly", current, "closed")
    again = await client.post(close, headers=ADMIN_H)  # harmless, the same time
    assert again.status_code == 200 and again.json()["closed_at"] == body["closed_at"]

    late = await send(client, board, "c3", "p3", 99)
    status = {s["window"]: s["status"] for s in late["standings"]}
    assert status == {"weekly": "closed", "all-time": "ranked"}
    assert await weekly(client, board, current) == [("p1", 30), ("p2", 20)]
    listed = (await client.get(f"/v1/boards/{board}/periods", params={"window": "weekly"})).json()
    assert {p["period"]: p["status"] for p in listed["periods"]}[current] == "closed"

    await wait_consumer_idle(client, runtime)
    await freeze(runtime, board)
    cur = await pg.execute(
        "SELECT entries FROM period_archives WHERE board_id = %s AND win = 'weekly'"
        " AND period = %s AND segment = ''",
        (board, current),
    )
    assert await cur.fetchall() == [(2,)]  # frozen as if the week had ended
    assert await weekly(client, board, current) == [("p1", 30), ("p2", 20)]
    # replayed and rebuilt: the late run still counts all-time only
    await replay(runtime.runlog, runtime.applier, first)
    await runtime.rebuilder.rebuild(board=board)
    assert await weekly(client, board, current) == [("p1", 30), ("p2", 20)]
    top = (await client.get(f"/v1/boards/{board}/top", params={"window": "all-time"})).json()
    assert [e["player_id"] for e in top["entries"]] == ["p3", "p1", "p2"]
