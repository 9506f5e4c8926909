"""Top-list cursors (v1.3): pages follow each other exactly under concurrent writes, at any
depth and on sharded boards; a cursor is opaque and bound to its list (tampering: 400)."""

from __future__ import annotations

import base64
import random
from typing import Any

import httpx
import pytest

from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id
from tests.support.durable import wait_until


@pytest.fixture
def make_board(make_sharded_board: MakeBoard) -> MakeBoard:
    return make_sharded_board


async def fill(client: httpx.AsyncClient, board: str, scores: dict[str, int]) -> None:
    items = list(scores.items())
    for i in range(0, len(items), 1000):
        runs = [
            {"run_id": new_board_id("r"), "player_id": p, "score": s}
            for p, s in items[i : i + 1000]
        ]
        response = await client.post(
            f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
        )
        assert response.status_code == 200, response.text
        assert all("standings" in r for r in response.json()["results"])


async def page(
    client: httpx.AsyncClient, board: str, headers: dict[str, str] | None = None, **params: Any
) -> dict[str, Any]:
    response = await client.get(f"/v1/boards/{board}/top", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def walk(
    client: httpx.AsyncClient,
    board: str,
    n: int,
    between: Any = None,
    headers: dict[str, str] | None = None,
    **params: Any,
) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    body = await page(client, board, headers, n=n, **params)
    while True:
        seen += body["entries"]
        if body["next_cursor"] is None:
            return seen
        if between is not None:
            await between()
        body = await page(client, board, headers, n=n, cursor=body["next_cursor"], **params)


async def test_pages_cover_the_list_exactly(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    rng = random.Random(5)
    scores = {f"p{i:03d}": rng.randrange(0, 40) for i in range(137)}  # many ties
    await fill(client, board, scores)
    whole = (await page(client, board, n=1000))["entries"]
    assert (await page(client, board, n=1000))["next_cursor"] is None
    for n in (1, 7, 50, 137):
        assert await walk(client, board, n) == whole, n


async def test_entries_that_stay_put_are_neither_repeated_nor_skipped(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    rng = random.Random(7)
    scores = {f"s{i:03d}": rng.randrange(100, 1000) for i in range(300)}
    await fill(client, board, scores)
    movers: set[str] = set()
    fresh = iter(range(10_000))

    async def churn() -> None:
        # some climb (maybe past the cursor), newcomers land anywhere
        batch: dict[str, int] = {}
        for player in rng.sample(sorted(scores), 5):
            movers.add(player)
            batch[player] = scores[player] + rng.randrange(1, 400)
        for _ in range(5):
            newcomer = f"n{next(fresh):04d}"
            movers.add(newcomer)
            batch[newcomer] = rng.randrange(0, 1500)
        await fill(client, board, batch)

    seen = await walk(client, board, 25, between=churn)
    still = [e["player_id"] for e in seen if e["player_id"] not in movers]
    assert sorted(still) == sorted(p for p in scores if p not in movers)  # each exactly once
    ranks = [e["rank"] for e in seen]
    assert ranks == sorted(ranks)  # ranks only grow from page to page


async def test_deep_pages_of_a_sharded_board(client: httpx.AsyncClient) -> None:
    board = new_board_id("deep")
    put = await client.put(f"/v1/boards/{board}", json={"shards": 4}, headers=ADMIN_H)
    assert put.status_code == 201
    await fill(client, board, {f"d{i:05d}": i for i in range(10_050)})
    too_deep = await client.get(f"/v1/boards/{board}/top", params={"n": 100, "offset": 10_000})
    assert too_deep.status_code == 400  # offset paging stops at 10,000 on a sharded board
    body = await page(client, board, n=1000)
    for _ in range(10):
        body = await page(client, board, n=1000, cursor=body["next_cursor"])
    assert [e["rank"] for e in body["entries"]] == list(range(10_001, 10_051))
    assert [e["player_id"] for e in body["entries"]][-1] == "d00000"
    assert body["next_cursor"] is None


async def test_a_tampered_or_foreign_cursor_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board, other = await make_board(windows=["all-time", "daily"]), await make_board()
    await fill(client, board, {f"t{i}": i for i in range(30)})
    await fill(client, other, {f"t{i}": i for i in range(30)})
    cursor = (await page(client, board, n=5))["next_cursor"]
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[-3] ^= 1  # one bit of the payload
    flipped = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    bad: list[tuple[str, dict[str, Any]]] = [
        (board, {"cursor": flipped}),
        (board, {"cursor": cursor[:-2]}),
        (board, {"cursor": "not a cursor"}),
        (board, {"cursor": "x" * 5000}),
        (board, {"cursor": "é"}),
        (board, {"cursor": cursor, "offset": 5}),
        (other, {"cursor": cursor}),  # another board's
        (board, {"cursor": cursor, "window": "daily"}),  # another window's
        (board, {"cursor": cursor, "period": "2020-01-01", "window": "daily"}),
    ]
    for target, params in bad:
        response = await client.get(f"/v1/boards/{target}/top", params={"n": 5, **params})
        assert response.status_code == 400, (params, response.text)
        assert response.json()["error"]["code"] == "invalid_request"
    fine = await page(client, board, n=5, cursor=cursor)
    assert [e["rank"] for e in fine["entries"]] == [6, 7, 8, 9, 10]


async def test_a_recreated_board_refuses_the_old_boards_cursor(client: httpx.AsyncClient) -> None:
    board = new_board_id("gen")
    assert (await client.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)).status_code == 201
    await fill(client, board, {f"g{i}": i for i in range(10)})
    cursor = (await page(client, board, n=3))["next_cursor"]
    assert (await client.delete(f"/v1/boards/{board}", headers=ADMIN_H)).status_code == 200

    async def recreated() -> bool:
        # 503 until the old incarnation's keys are gone (services/deletion.py)
        response = await client.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
        return response.status_code == 201

    assert await wait_until(recreated, timeout_s=15, step_s=0.2)
    await fill(client, board, {f"g{i}": i for i in range(10)})
    stale = await client.get(f"/v1/boards/{board}/top", params={"cursor": cursor})
    assert stale.status_code == 400


async def test_an_own_view_pages_with_the_viewer_in_it_once(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    viewer = new_board_id("cv")
    await fill(client, board, {**{f"v{i:02d}": i * 10 for i in range(40)}, viewer: 205})
    assert (await client.post(f"/v1/players/{viewer}/ban", headers=ADMIN_H)).status_code == 200
    public = await walk(client, board, 6)
    assert viewer not in [e["player_id"] for e in public] and len(public) == 40
    own = await walk(client, board, 6, headers=SERVER_H, viewer=viewer)
    assert [e["player_id"] for e in own].count(viewer) == 1
    assert [e["rank"] for e in own] == list(range(1, 42))
    # an own view's cursor is that viewer's alone
    cursor = (await page(client, board, SERVER_H, n=6, viewer=viewer))["next_cursor"]
    public_use = await client.get(f"/v1/boards/{board}/top", params={"cursor": cursor})
    assert public_use.status_code == 400
