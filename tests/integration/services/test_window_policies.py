"""`window_policies` (CONTRACT v1.3): a policy per window overriding the board's, the seeds'
"all-time best, weekly total" on one board. Each window keeps its entries by its own
policy through every path: the submit's answer, the durable copy, a rebuild, a replay, a
ban and its lifting; on an unsharded board and on one split over 4 shards."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection

from rankd.runtime import Runtime
from rankd.services.replay import replay
from tests.support.common import ADMIN_H, MakeBoard
from tests.support.durable import submit, wait_consumer_idle


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


RUNS = [("p1", 30), ("p1", 50), ("p2", 70), ("p1", 40), ("p3", 10)]
# all-time keeps each player's best, weekly adds every run up
BEST = [("p2", 70), ("p1", 50), ("p3", 10)]
TOTALS = [("p1", 120), ("p2", 70), ("p3", 10)]


async def tops(client: httpx.AsyncClient, board: str) -> list[list[tuple[str, int]]]:
    found = []
    for window in ("all-time", "weekly"):
        page = await client.get(f"/v1/boards/{board}/top", params={"window": window})
        assert page.status_code == 200, page.text
        found.append([(e["player_id"], e["score"]) for e in page.json()["entries"]])
    return found


async def pg_scores(pg: AsyncConnection[Any], board: str) -> dict[str, list[tuple[str, int]]]:
    cur = await pg.execute(
        "SELECT win, player_id, score FROM player_best WHERE board_id = %s AND segment = ''"
        " ORDER BY win, score DESC",
        (board,),
    )
    found: dict[str, list[tuple[str, int]]] = {}
    for win, player, score in await cur.fetchall():
        found.setdefault(win, []).append((player, int(score)))
    return found


async def test_all_time_best_and_weekly_totals_on_one_board(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    board = await make_board(
        windows=["all-time", "weekly"], policy="best", window_policies={"weekly": "sum"}
    )
    config = (await client.get(f"/v1/boards/{board}")).json()
    assert (config["policy"], config["window_policies"]) == ("best", {"weekly": "sum"})
    now = datetime.now(UTC)
    for n, (player, score) in enumerate(RUNS):
        answer = await submit(client, board, f"r{n}", player, score, now)
    standing = {s["window"]: s["score"] for s in answer["standings"]}
    assert standing == {"all-time": 10, "weekly": 10}
    last_p1 = await submit(client, board, "r3", "p1", 40, now)  # a resend counts once
    assert {s["window"]: s["score"] for s in last_p1["standings"]} == {
        "all-time": 50,
        "weekly": 120,
    }
    assert await tops(client, board) == [BEST, TOTALS]
    await wait_consumer_idle(client, runtime)
    durable = await pg_scores(pg, board)
    assert durable["all-time"] == BEST
    assert sorted(durable[next(w for w in durable if w != "all-time")]) == sorted(TOTALS)

    # a ban moves each window's entry by its own policy, and lifting it brings both back
    assert (await client.post("/v1/players/p1/ban", headers=ADMIN_H)).status_code == 200
    hidden = await tops(client, board)
    assert hidden == [[e for e in BEST if e[0] != "p1"], [e for e in TOTALS if e[0] != "p1"]]
    await submit(client, board, "r9", "p1", 5, now)  # banned: still counted, unseen
    assert await tops(client, board) == hidden
    assert (await client.delete("/v1/players/p1/ban", headers=ADMIN_H)).status_code == 200
    totals = [("p1", 125), *TOTALS[1:]]
    assert await tops(client, board) == [BEST, totals]

    # rebuilt from PostgreSQL, and the log replayed again: the same
    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board)
    assert await tops(client, board) == [BEST, totals]
    # the rebuilt weekly total still knows which runs it counted: a resend counts once
    await submit(client, board, "r9", "p1", 5, now)
    assert await tops(client, board) == [BEST, totals]
    await replay(runtime.runlog, runtime.applier, first)
    assert await tops(client, board) == [BEST, totals]


async def test_window_policies_are_checked_and_fixed_once_the_board_has_runs(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["all-time", "weekly"])
    path = f"/v1/boards/{board}"
    for bad in (
        {"window_policies": {"weekly": "total"}},
        {"window_policies": {"yearly": "sum"}},
        {"window_policies": {"daily": "sum"}},  # not one of the board's windows
        {"window_policies": ["weekly", "sum"]},
        {"window_policies": {"all-time": "sum", "weekly": "sum"}, "hold_top": 3},
    ):
        response = await client.put(path, json=bad, headers=ADMIN_H)
        assert response.status_code == 400, (bad, response.text)
        assert (await client.get(path)).json()["window_policies"] == {}
    latest = await client.put(path, json={"window_policies": {"weekly": "latest"}}, headers=ADMIN_H)
    assert latest.json()["window_policies"] == {"weekly": "latest"}  # v1.3's third policy
    # before any run it may change; afterwards it is fixed, like policy
    ok = await client.put(path, json={"window_policies": {"weekly": "sum"}}, headers=ADMIN_H)
    assert ok.status_code == 200 and ok.json()["window_policies"] == {"weekly": "sum"}
    await submit(client, board, "w1", "p1", 5, datetime.now(UTC))
    fixed = await client.put(path, json={"window_policies": {}}, headers=ADMIN_H)
    assert fixed.status_code == 409, fixed.text
    assert fixed.json()["error"]["code"] == "board_immutable_field"
