"""One player across boards (GET /v1/players/{player_id}/standings, v1.3): one standing per
board where the player has an entry, the public view hiding bans, a token's own view
showing them, unknown boards named, bad input refused."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id


async def run(client: httpx.AsyncClient, board: str, player: str, score: int) -> None:
    body = {"run_id": new_board_id("r"), "player_id": player, "score": score}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text


async def standings(
    client: httpx.AsyncClient, player: str, headers: dict[str, str] | None = None, **params: str
) -> dict[str, object]:
    response = await client.get(f"/v1/players/{player}/standings", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_one_standing_per_board_with_an_entry(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    asc = await make_board(order="asc", windows=["weekly", "all-time"])
    desc = await make_board(shards=4)
    empty = await make_board()
    player = new_board_id("sp")
    await run(client, asc, player, 70)
    await run(client, asc, "rival", 50)
    await run(client, desc, player, 70)
    await run(client, desc, "rival", 50)
    missing = new_board_id("gone")
    body = await standings(client, player, boards=f"{asc},{desc},{empty},{missing},{asc}")
    got = {s["board_id"]: s for s in body["standings"]}  # type: ignore[attr-defined]
    assert set(got) == {asc, desc}
    assert got[asc]["rank"] == 2 and got[asc]["window"] == "weekly" and got[asc]["total"] == 2
    assert got[desc]["rank"] == 1 and got[desc]["window"] == "all-time"
    assert set(got[asc]) == {
        "board_id",
        "window",
        "period",
        "rank",
        "score",
        "achieved_at",
        "total",
    }
    assert body["unknown_boards"] == [missing]
    # window= picks that window where a board has it; boards without it are left out
    weekly = await standings(client, player, boards=f"{asc},{desc}", window="all-time")
    assert {s["board_id"] for s in weekly["standings"]} == {asc, desc}  # type: ignore[attr-defined]
    only = await standings(client, player, boards=f"{asc},{desc}", window="weekly")
    assert [s["board_id"] for s in only["standings"]] == [asc]  # type: ignore[attr-defined]


async def test_a_banned_player_sees_themselves_through_a_token(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    player = new_board_id("spb")
    await run(client, board, player, 10)
    assert (await client.post(f"/v1/players/{player}/ban", headers=ADMIN_H)).status_code == 200
    deadline = time.monotonic() + 2
    while (await standings(client, player, boards=board))["standings"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    minted = await client.post(f"/v1/players/{player}/tokens", json={}, headers=SERVER_H)
    token = {"Authorization": f"Bearer {minted.json()['token']}"}
    own = await standings(client, player, token, boards=board)
    assert [s["rank"] for s in own["standings"]] == [1]  # type: ignore[attr-defined]
    by_server = await standings(client, player, SERVER_H, boards=board, viewer=player)
    assert by_server["standings"] == own["standings"]
    # a token is its own player's only
    other = await client.get(
        "/v1/players/someone/standings", params={"boards": board}, headers=token
    )
    assert other.status_code == 200 and other.json()["standings"] == []
    assert (
        await client.get(
            "/v1/players/someone/standings",
            params={"boards": board, "viewer": "someone"},
            headers=token,
        )
    ).status_code == 403


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"boards": ""},
        {"boards": ",".join(f"b{i}" for i in range(101))},
        {"boards": "Bad"},
        {"boards": "ok,x\n"},
        {"boards": "ok", "window": "fortnightly"},
        {"boards": "ok", "include": "metadata"},
    ],
)
async def test_bad_input_is_400(client: httpx.AsyncClient, params: dict[str, str]) -> None:
    response = await client.get("/v1/players/p1/standings", params=params)
    assert response.status_code == 400, response.text


async def test_a_bad_player_id_is_400(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/players/bad%20id/standings", params={"boards": "x"})
    assert response.status_code == 400
