"""Segments: a run lands in the global standings and each segment's, in every window, in one
step; reads take segment=<dimension>:<value>; profiles fill what a run leaves out; the
durable copy, rebuild and replay keep segments."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.boards import BoardConfig
from rankd.plan import plan
from rankd.runs import Run, decode_message, encode_message
from rankd.runtime import Runtime
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.durable import wait_consumer_idle
from tests.support.wire import assert_error

WINDOWS = ["all-time", "daily", "weekly", "monthly"]


async def post(client: httpx.AsyncClient, board: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)


async def top(client: httpx.AsyncClient, board: str, **params: str) -> dict[str, Any]:
    response = await client.get(f"/v1/boards/{board}/top", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def players(body: dict[str, Any]) -> list[str]:
    return [e["player_id"] for e in body["entries"]]


def test_two_dimensions_and_four_windows_make_twelve_targets() -> None:
    board = BoardConfig("fan", windows=tuple(WINDOWS), segments=("country", "platform"))
    run = Run("r", "p", 5, 1_793_730_127_123, 1_793_730_127_123)
    run.segments = (("country", "FR"), ("platform", "pc"))
    targets = plan(board, run)
    assert len(targets) == 12
    assert [t.segment for t in targets[:4]] == [""] * 4
    assert {(t.window, t.segment) for t in targets[4:]} == {
        (w, s) for w in WINDOWS for s in ("country:FR", "platform:pc")
    }


def test_the_log_carries_a_runs_segments_and_reads_old_messages() -> None:
    run = Run("r", "p", 5, 1, 2, (("country", "FR"),))
    _, [back] = decode_message(encode_message("b", [run]))
    assert back == run
    old = b'{"v": 1, "board": "b", "runs": [["r", "p", 5, 1, 2]]}'
    assert decode_message(old)[1][0].segments == ()


async def test_a_run_lands_globally_and_in_each_of_its_segments(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["all-time", "daily"], segments=["country", "platform"])
    runs = [
        ("a", 50, {"country": "FR", "platform": "pc"}),
        ("b", 70, {"country": "DE", "platform": "pc"}),
        ("c", 60, {"country": "FR"}),
        ("d", 40, {}),
    ]
    results = {}
    for player, score, segments in runs:
        response = await post(
            client,
            board,
            {"run_id": f"r-{player}", "player_id": player, "score": score, "segments": segments},
        )
        assert response.status_code == 200, response.text
        results[player] = response.json()["standings"]
    a = {(s["window"], s["segment"]): s for s in results["a"]}
    assert set(a) == {
        (w, s) for w in ("all-time", "daily") for s in (None, "country:FR", "platform:pc")
    }
    assert a[("all-time", None)]["rank"] == 1  # alone so far
    c = {(s["window"], s["segment"]): s["rank"] for s in results["c"]}
    assert c == {
        ("all-time", None): 2,
        ("daily", None): 2,
        ("all-time", "country:FR"): 1,
        ("daily", "country:FR"): 1,
    }
    assert players(await top(client, board)) == ["b", "c", "a", "d"]
    assert players(await top(client, board, segment="country:FR")) == ["c", "a"]
    fr = await top(client, board, segment="country:FR", window="daily")
    assert fr["total"] == 2
    assert players(await top(client, board, segment="platform:pc")) == ["b", "a"]
    assert (await top(client, board, segment="country:JP"))["total"] == 0
    me = await client.get(f"/v1/boards/{board}/players/a", params={"segment": "country:FR"})
    assert (me.json()["rank"], me.json()["total"]) == (2, 2)
    around = await client.get(
        f"/v1/boards/{board}/players/c/around", params={"segment": "country:FR", "range": 5}
    )
    assert [e["player_id"] for e in around.json()["entries"]] == ["c", "a"]
    friends = await client.get(
        f"/v1/boards/{board}/players/a/friends",
        params={"segment": "platform:pc", "ids": "b,c,d"},
    )
    assert [e["player_id"] for e in friends.json()["entries"]] == ["b", "a"]
    rank_of = await client.get(
        f"/v1/boards/{board}/rank-of", params={"segment": "country:FR", "score": 55}
    )
    assert rank_of.json()["rank"] == 2


async def test_the_profile_fills_what_a_run_leaves_out_and_the_run_wins(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(segments=["country", "platform"])
    profile = {"name": "kai", "segments": {"country": "FR", "platform": "pc", "guild": "x"}}
    response = await client.put("/v1/players/kai", json=profile, headers=SERVER_H)
    assert response.status_code == 200, response.text
    assert response.json() == {"player_id": "kai", **profile}
    got = await client.get("/v1/players/kai", headers=SERVER_H)
    assert got.json() == {"player_id": "kai", **profile}
    body = {"run_id": "k1", "player_id": "kai", "score": 9, "segments": {"platform": "mobile"}}
    standings = (await post(client, board, body)).json()["standings"]
    assert sorted(s["segment"] or "" for s in standings) == ["", "country:FR", "platform:mobile"]
    # a name-only update keeps the segments; the next run still takes them
    await client.put("/v1/players/kai", json={"name": "kai2"}, headers=SERVER_H)
    assert (await client.get("/v1/players/kai", headers=SERVER_H)).json()["segments"] == {
        "country": "FR",
        "platform": "pc",
        "guild": "x",
    }
    standings = await post(client, board, {"run_id": "k2", "player_id": "kai", "score": 1})
    assert sorted(s["segment"] or "" for s in standings.json()["standings"]) == [
        "",
        "country:FR",
        "platform:pc",
    ]
    unknown = await client.get("/v1/players/nobody-here", headers=SERVER_H)
    assert unknown.json() == {"player_id": "nobody-here", "name": None, "segments": {}}
    assert_error(await client.get("/v1/players/kai"), 401, "unauthorized")


@pytest.mark.parametrize(
    ("segments", "word"),
    [
        ({"guild": "x"}, "guild"),
        ({"country": "F R"}, "country"),
        ({"country": ""}, "country"),
        ({"country": "x" * 33}, "country"),
        (["country"], "segments"),
        ({"country": 5}, "country"),
    ],
)
async def test_bad_run_segments_are_400_and_change_nothing(
    client: httpx.AsyncClient, make_board: MakeBoard, segments: Any, word: str
) -> None:
    board = await make_board(segments=["country"])
    body = {"run_id": "r", "player_id": "p", "score": 1, "segments": segments}
    error = assert_error(await post(client, board, body), 400, "invalid_request")
    assert word in error["message"]
    assert (await top(client, board))["total"] == 0


@pytest.mark.parametrize("segment", ["country", "guild:x", "country:F R", ":FR", "country:"])
async def test_bad_read_segments_are_400(
    client: httpx.AsyncClient, make_board: MakeBoard, segment: str
) -> None:
    board = await make_board(segments=["country"])
    for path in ("top", "players/p", "periods"):
        response = await client.get(f"/v1/boards/{board}/{path}", params={"segment": segment})
        assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "segments",
    [["a", "b", "c", "d", "e"], ["Country"], ["1x"], ["a", "a"], "country", [""]],
)
async def test_bad_board_segments_are_400(client: httpx.AsyncClient, segments: Any) -> None:
    response = await client.put("/v1/boards/segbad", json={"segments": segments}, headers=ADMIN_H)
    assert "segments" in assert_error(response, 400, "invalid_request")["message"]


async def test_a_dimension_added_after_runs_fills_from_the_next_run(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    assert (await post(client, board, {"run_id": "r1", "player_id": "p1", "score": 5})).is_success
    response = await client.put(
        f"/v1/boards/{board}", json={"segments": ["country"]}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text
    assert response.json()["segments"] == ["country"]
    body = {"run_id": "r2", "player_id": "p2", "score": 7, "segments": {"country": "FR"}}
    assert (await post(client, board, body)).is_success
    assert players(await top(client, board, segment="country:FR")) == ["p2"]
    assert players(await top(client, board)) == ["p2", "p1"]


async def test_the_durable_copy_rebuild_and_replay_keep_segments(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    runtime: Runtime,
) -> None:
    board = await make_board(windows=["all-time", "weekly"], segments=["country"])
    for i in range(12):
        country = ("FR", "DE", "JP")[i % 3]
        body = {
            "run_id": f"r{i}",
            "player_id": f"p{i % 6}",
            "score": 10 + i,
            "segments": {"country": country},
        }
        assert (await post(client, board, body)).is_success
    await wait_consumer_idle(client, runtime)
    reads = {
        (segment, window): await top(
            client, board, window=window, **({"segment": segment} if segment else {})
        )
        for segment in ("", "country:FR", "country:DE", "country:JP")
        for window in ("all-time", "weekly")
    }
    cur = await pg.execute(
        "SELECT DISTINCT segment FROM player_best WHERE board_id = %s ORDER BY 1", (board,)
    )
    assert [r[0] for r in await cur.fetchall()] == ["", "country:DE", "country:FR", "country:JP"]

    async for key in redis.scan_iter(match=f"lb:{{{board}*"):
        await redis.delete(key)
    assert (await top(client, board, segment="country:FR"))["total"] == 0
    report = await runtime.rebuilder.rebuild(board=board)
    assert report is not None and report.periods == 8
    for (segment, window), before in reads.items():
        params = {"window": window, **({"segment": segment} if segment else {})}
        assert await top(client, board, **params) == before, (segment, window)
