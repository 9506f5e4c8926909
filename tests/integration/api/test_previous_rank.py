"""Each submit standing carries previous_rank (v1.3): the player's rank before the run, read
in the same atomic step, null for a first entry; on sharded boards too (the other shards'
entries ahead of the old entry counted like the new one's)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.common import SERVER_H, MakeBoard, new_board_id


@pytest.fixture
def make_board(make_sharded_board: MakeBoard) -> MakeBoard:
    return make_sharded_board


async def submit(client: httpx.AsyncClient, board: str, player: str, score: int) -> dict[str, Any]:
    run = {"run_id": new_board_id("r"), "player_id": player, "score": score}
    response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
    assert response.status_code == 200, response.text
    [standing] = response.json()["standings"]
    return dict(standing)


def moved(standing: dict[str, Any]) -> tuple[Any, Any, bool]:
    return standing["previous_rank"], standing["rank"], standing["improved"]


async def test_best_board(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board = await make_board()
    assert moved(await submit(client, board, "p1", 100)) == (None, 1, True)
    assert moved(await submit(client, board, "p2", 200)) == (None, 1, True)
    assert moved(await submit(client, board, "p3", 150)) == (None, 2, True)
    # p1 climbs from 3rd to 1st: "you climbed 2 places"
    assert moved(await submit(client, board, "p1", 300)) == (3, 1, True)
    # a worse run changes nothing: before is as after
    assert moved(await submit(client, board, "p1", 50)) == (1, 1, False)
    assert moved(await submit(client, board, "p3", 250)) == (3, 2, True)
    # others moved since p2's last run: previous_rank is p2's rank just before this one
    assert moved(await submit(client, board, "p2", 10)) == (3, 3, False)


async def test_sum_board(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board = await make_board(policy="sum")
    assert moved(await submit(client, board, "a", 10)) == (None, 1, True)
    assert moved(await submit(client, board, "b", 30)) == (None, 1, True)
    assert moved(await submit(client, board, "a", 25)) == (2, 1, True)
    assert moved(await submit(client, board, "b", 0))[0] == 2


async def test_a_batch_sees_its_own_earlier_runs(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    await submit(client, board, "top", 1000)
    runs = [
        {"run_id": new_board_id("r"), "player_id": "me", "score": score} for score in (5, 2000, 7)
    ]
    response = await client.post(
        f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
    )
    got = [moved(r["standings"][0]) for r in response.json()["results"]]
    assert got == [(None, 2, True), (2, 1, True), (1, 1, False)]
