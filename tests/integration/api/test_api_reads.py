"""Read endpoints, player names and operations endpoints against the real servers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.wire import assert_error, iso, weekly_id

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ENTRY_KEYS = {"rank", "player_id", "score", "achieved_at", "name"}


# --- helpers ---------------------------------------------------------------------------


def week_start(moment: datetime) -> datetime:
    day = moment.astimezone(UTC).date() - timedelta(days=moment.weekday())
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


async def submit(
    client: httpx.AsyncClient,
    board_id: str,
    player_id: str,
    score: int,
    ended_at: datetime | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"run_id": f"r-{player_id}-{score}", "player_id": player_id}
    body["score"] = score
    if ended_at is not None:
        body["ended_at"] = iso(ended_at)
    response = await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def fill(client: httpx.AsyncClient, board_id: str, scores: dict[str, int]) -> None:
    for player_id, score in scores.items():
        await submit(client, board_id, player_id, score)


async def get(client: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


FIVE = {"p1": 50, "p2": 40, "p3": 30, "p4": 20, "p5": 10}


@pytest.fixture
async def five(client: httpx.AsyncClient, make_board: MakeBoard) -> str:
    """A board with p1..p5 holding 50, 40, 30, 20, 10 (so pN has rank N)."""
    board_id: str = await make_board()
    await fill(client, board_id, FIVE)
    return board_id


# --- top -------------------------------------------------------------------------------


async def test_top_lists_entries_best_first(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/top")
    assert body["board_id"] == five
    assert body["window"] == "all-time"
    assert body["period"] == "all-time"
    assert body["total"] == 5
    entries = body["entries"]
    assert [e["player_id"] for e in entries] == ["p1", "p2", "p3", "p4", "p5"]
    assert [e["score"] for e in entries] == [50, 40, 30, 20, 10]
    for entry in entries:
        assert set(entry) == ENTRY_KEYS, entry
        assert entry["name"] is None
        assert TIME_RE.match(entry["achieved_at"])


async def test_top_ranks_are_one_based_and_contiguous(client: httpx.AsyncClient, five: str) -> None:
    entries = (await get(client, f"/v1/boards/{five}/top"))["entries"]
    assert [e["rank"] for e in entries] == [1, 2, 3, 4, 5]


async def test_top_n_and_offset_page_through_the_board(
    client: httpx.AsyncClient, five: str
) -> None:
    body = await get(client, f"/v1/boards/{five}/top", n=2, offset=1)
    assert body["total"] == 5
    assert [(e["rank"], e["player_id"]) for e in body["entries"]] == [(2, "p2"), (3, "p3")]
    last = await get(client, f"/v1/boards/{five}/top", n=10, offset=4)
    assert [(e["rank"], e["player_id"]) for e in last["entries"]] == [(5, "p5")]
    beyond = await get(client, f"/v1/boards/{five}/top", n=10, offset=5)
    assert beyond["entries"] == []
    assert beyond["total"] == 5


async def test_top_default_n_is_10(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    await fill(client, board_id, {f"p{i}": i for i in range(12)})
    body = await get(client, f"/v1/boards/{board_id}/top")
    assert len(body["entries"]) == 10
    assert body["total"] == 12


async def test_top_n_1_and_1000_are_accepted(client: httpx.AsyncClient, five: str) -> None:
    assert len((await get(client, f"/v1/boards/{five}/top", n=1))["entries"]) == 1
    assert len((await get(client, f"/v1/boards/{five}/top", n=1000))["entries"]) == 5


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"n": 0}, id="n-0"),
        pytest.param({"n": 1001}, id="n-1001"),
        pytest.param({"n": -1}, id="n-negative"),
        pytest.param({"n": "ten"}, id="n-not-int"),
        pytest.param({"n": "1.5"}, id="n-float"),
        pytest.param({"offset": -1}, id="offset-negative"),
        pytest.param({"offset": "x"}, id="offset-not-int"),
    ],
)
async def test_top_bad_paging_is_400(
    client: httpx.AsyncClient, five: str, params: dict[str, Any]
) -> None:
    response = await client.get(f"/v1/boards/{five}/top", params=params)
    error = assert_error(response, 400, "invalid_request")
    assert next(iter(params)) in error["message"]


async def test_empty_board_top_is_empty(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    body = await get(client, f"/v1/boards/{board_id}/top")
    assert (body["total"], body["entries"]) == (0, [])


# --- player ----------------------------------------------------------------------------


async def test_player_returns_entry_total_and_percentile(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    await fill(client, board_id, {"a": 40, "b": 30, "c": 20, "d": 10})
    best = await get(client, f"/v1/boards/{board_id}/players/a")
    assert set(best) >= ENTRY_KEYS
    assert (best["rank"], best["player_id"], best["score"], best["name"]) == (1, "a", 40, None)
    assert best["total"] == 4
    assert best["percentile"] == 100.0
    assert TIME_RE.match(best["achieved_at"])
    worst = await get(client, f"/v1/boards/{board_id}/players/d")
    assert (worst["rank"], worst["total"], worst["percentile"]) == (4, 4, 25.0)
    second = await get(client, f"/v1/boards/{board_id}/players/b")
    assert second["percentile"] == 75.0


async def test_player_matches_their_top_entry(client: httpx.AsyncClient, five: str) -> None:
    [entry] = (await get(client, f"/v1/boards/{five}/top", n=1, offset=2))["entries"]
    player = await get(client, f"/v1/boards/{five}/players/{entry['player_id']}")
    assert {k: player[k] for k in ENTRY_KEYS} == entry


async def test_unknown_player_is_404_player_not_ranked(
    client: httpx.AsyncClient, five: str
) -> None:
    response = await client.get(f"/v1/boards/{five}/players/nobody")
    assert_error(response, 404, "player_not_ranked")


async def test_bad_player_id_is_400(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(f"/v1/boards/{five}/players/bad.id")
    error = assert_error(response, 400, "invalid_request")
    assert "player_id" in error["message"]


async def test_player_on_unknown_board_is_404_board_not_found(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/boards/no-such-board-xyz/players/p1")
    assert_error(response, 404, "board_not_found")


# --- around ----------------------------------------------------------------------------


async def test_around_middle_player_range_1(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p3/around", range=1)
    assert [(e["rank"], e["player_id"]) for e in body["entries"]] == [
        (2, "p2"),
        (3, "p3"),
        (4, "p4"),
    ]
    assert all(set(e) == ENTRY_KEYS for e in body["entries"])


async def test_around_top_player_has_nobody_above(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p1/around", range=1)
    assert [(e["rank"], e["player_id"]) for e in body["entries"]] == [(1, "p1"), (2, "p2")]


async def test_around_bottom_player_has_nobody_below(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p5/around", range=1)
    assert [(e["rank"], e["player_id"]) for e in body["entries"]] == [(4, "p4"), (5, "p5")]


async def test_around_range_0_is_the_player_alone(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p2/around", range=0)
    assert [(e["rank"], e["player_id"]) for e in body["entries"]] == [(2, "p2")]


async def test_around_default_range_is_5(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    await fill(client, board_id, {f"p{i:02d}": 100 - i for i in range(1, 21)})
    body = await get(client, f"/v1/boards/{board_id}/players/p10/around")
    assert [e["rank"] for e in body["entries"]] == list(range(5, 16))


async def test_around_range_100_is_accepted(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p3/around", range=100)
    assert [e["rank"] for e in body["entries"]] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("value", [101, -1, "x"])
async def test_around_bad_range_is_400(client: httpx.AsyncClient, five: str, value: Any) -> None:
    response = await client.get(f"/v1/boards/{five}/players/p3/around", params={"range": value})
    error = assert_error(response, 400, "invalid_request")
    assert "range" in error["message"]


async def test_around_unknown_player_is_404(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(f"/v1/boards/{five}/players/nobody/around", params={"range": 1})
    assert_error(response, 404, "player_not_ranked")


# --- friends ---------------------------------------------------------------------------


async def test_friends_lists_player_and_ranked_friends_best_first(
    client: httpx.AsyncClient, five: str
) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p3/friends", ids="p5,p1,ghost")
    entries = body["entries"]
    assert [(e["position"], e["rank"], e["player_id"]) for e in entries] == [
        (1, 1, "p1"),
        (2, 3, "p3"),
        (3, 5, "p5"),
    ]
    assert all(set(e) == {*ENTRY_KEYS, "position"} for e in entries)
    assert body["not_found"] == ["ghost"]


async def test_friends_of_unranked_player_lists_ranked_friends(
    client: httpx.AsyncClient, five: str
) -> None:
    body = await get(client, f"/v1/boards/{five}/players/ghost/friends", ids="p4,p2")
    assert [(e["position"], e["rank"], e["player_id"]) for e in body["entries"]] == [
        (1, 2, "p2"),
        (2, 4, "p4"),
    ]
    assert body["not_found"] == ["ghost"]  # the player too, when they have no entry


async def test_friends_without_ids_is_the_player_alone(
    client: httpx.AsyncClient, five: str
) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p4/friends")
    assert [(e["position"], e["rank"]) for e in body["entries"]] == [(1, 4)]


async def test_friends_repeated_ids_appear_once(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/players/p2/friends", ids="p2,p1,p1")
    assert [e["player_id"] for e in body["entries"]] == ["p1", "p2"]
    assert body["not_found"] == []


async def test_friends_1000_ids_are_accepted(client: httpx.AsyncClient, five: str) -> None:
    ids = ",".join(["p1", *(f"x{i}" for i in range(999))])
    body = await get(client, f"/v1/boards/{five}/players/p2/friends", ids=ids)
    assert [e["player_id"] for e in body["entries"]] == ["p1", "p2"]


async def test_friends_more_than_1000_ids_is_400(client: httpx.AsyncClient, five: str) -> None:
    ids = ",".join(f"x{i}" for i in range(1001))
    response = await client.get(f"/v1/boards/{five}/players/p2/friends", params={"ids": ids})
    error = assert_error(response, 400, "invalid_request")
    assert "1000" in error["message"]


async def test_friends_bad_id_is_400(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(
        f"/v1/boards/{five}/players/p2/friends", params={"ids": "p1,not valid"}
    )
    error = assert_error(response, 400, "invalid_request")
    assert "ids" in error["message"]


# --- rank-of ---------------------------------------------------------------------------


async def test_rank_of_equal_score_ranks_after_the_holder(
    client: httpx.AsyncClient, five: str
) -> None:
    body = await get(client, f"/v1/boards/{five}/rank-of", score=30)
    assert (body["rank"], body["total"]) == (4, 5)


async def test_rank_of_between_scores(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/rank-of", score=35)
    assert (body["rank"], body["total"]) == (3, 5)


async def test_rank_of_above_everyone_is_1(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/rank-of", score=1000)
    assert (body["rank"], body["total"]) == (1, 5)


async def test_rank_of_below_everyone_is_last(client: httpx.AsyncClient, five: str) -> None:
    body = await get(client, f"/v1/boards/{five}/rank-of", score=0)
    assert (body["rank"], body["total"]) == (6, 5)


async def test_rank_of_on_empty_board_is_1(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    body = await get(client, f"/v1/boards/{board_id}/rank-of", score=5)
    assert (body["rank"], body["total"]) == (1, 0)


async def test_rank_of_on_asc_board(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board(order="asc", max_score=10_000)
    await fill(client, board_id, {"a": 30, "b": 40, "c": 50})
    assert (await get(client, f"/v1/boards/{board_id}/rank-of", score=40))["rank"] == 3
    assert (await get(client, f"/v1/boards/{board_id}/rank-of", score=10))["rank"] == 1
    assert (await get(client, f"/v1/boards/{board_id}/rank-of", score=60))["rank"] == 4


async def test_rank_of_agrees_with_a_real_submit(client: httpx.AsyncClient, five: str) -> None:
    predicted = (await get(client, f"/v1/boards/{five}/rank-of", score=40))["rank"]
    standing = (await submit(client, five, "newcomer", 40))["standings"][0]
    assert standing["rank"] == predicted


@pytest.mark.parametrize("value", [-1, "abc", "1.5"])
async def test_rank_of_bad_score_is_400(client: httpx.AsyncClient, five: str, value: Any) -> None:
    response = await client.get(f"/v1/boards/{five}/rank-of", params={"score": value})
    error = assert_error(response, 400, "invalid_request")
    assert "score" in error["message"]


async def test_rank_of_missing_score_is_400(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(f"/v1/boards/{five}/rank-of")
    assert_error(response, 400, "invalid_request")


async def test_rank_of_above_max_score_is_400_score_out_of_range(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000)
    response = await client.get(f"/v1/boards/{board_id}/rank-of", params={"score": 1001})
    assert_error(response, 400, "score_out_of_range")
    body = await get(client, f"/v1/boards/{board_id}/rank-of", score=1000)
    assert body["rank"] == 1


# --- windows and periods ---------------------------------------------------------------


async def test_reads_default_to_the_first_window_and_current_period(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["weekly", "all-time"])
    await submit(client, board_id, "p1", 5)
    body = await get(client, f"/v1/boards/{board_id}/top")
    now = datetime.now(UTC)
    assert body["window"] == "weekly"
    assert body["period"] == weekly_id(now)
    assert body["total"] == 1


async def test_periods_shows_the_current_week_open(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "weekly"])
    body = await get(client, f"/v1/boards/{board_id}/periods", window="weekly")
    now = datetime.now(UTC)
    current = [p for p in body["periods"] if p["period"] == weekly_id(now)]
    assert current == [
        {
            "period": weekly_id(now),
            "status": "open",
            "starts_at": iso(week_start(now)),
            "ends_at": iso(week_start(now) + timedelta(days=7)),
        }
    ]


async def test_periods_lists_past_period_closed_after_grace(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["weekly"], grace_seconds=30 * 86_400)
    ended = datetime.now(UTC) - timedelta(days=14)
    assert (await submit(client, board_id, "p1", 7, ended))["standings"][0]["status"] == "ranked"
    listed = await get(client, f"/v1/boards/{board_id}/periods", window="weekly")
    statuses = {p["period"]: p["status"] for p in listed["periods"]}
    assert statuses[weekly_id(ended)] == "open"  # still within its 30-day grace
    response = await client.put(
        f"/v1/boards/{board_id}", json={"grace_seconds": 0}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text
    listed = await get(client, f"/v1/boards/{board_id}/periods", window="weekly")
    periods = listed["periods"]
    assert [p["period"] for p in periods] == [weekly_id(datetime.now(UTC)), weekly_id(ended)]
    assert [p["status"] for p in periods] == ["open", "closed"]
    old = periods[1]
    assert old["starts_at"] == iso(week_start(ended))
    assert old["ends_at"] == iso(week_start(ended) + timedelta(days=7))
    # a closed period stays readable
    body = await get(client, f"/v1/boards/{board_id}/top", period=weekly_id(ended))
    assert [(e["player_id"], e["score"]) for e in body["entries"]] == [("p1", 7)]


async def test_periods_unknown_window_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "weekly"])
    response = await client.get(f"/v1/boards/{board_id}/periods", params={"window": "yearly"})
    error = assert_error(response, 400, "invalid_request")
    assert "window" in error["message"]


@pytest.mark.parametrize(
    "path", ["top", "players/p1", "players/p1/around", "players/p1/friends", "periods"]
)
async def test_window_not_on_the_board_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard, path: str
) -> None:
    board_id = await make_board(windows=["all-time", "weekly"])
    await submit(client, board_id, "p1", 5)
    response = await client.get(f"/v1/boards/{board_id}/{path}", params={"window": "daily"})
    error = assert_error(response, 400, "invalid_request")
    assert "window" in error["message"]


async def test_rank_of_window_not_on_the_board_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time"])
    response = await client.get(
        f"/v1/boards/{board_id}/rank-of", params={"score": 5, "window": "monthly"}
    )
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    ("window", "period"),
    [
        ("monthly", "2026-13"),
        ("monthly", "2026-00"),
        ("monthly", "2026-1"),
        ("daily", "2026-02-30"),
        ("daily", "2026-11"),
        ("daily", "yesterday"),
        ("weekly", "2026-W54"),
        ("weekly", "2026-W00"),
        ("weekly", "2026-11-02"),
        ("all-time", "2026"),
    ],
)
async def test_malformed_period_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard, window: str, period: str
) -> None:
    board_id = await make_board(windows=["all-time", "daily", "weekly", "monthly"])
    response = await client.get(
        f"/v1/boards/{board_id}/top", params={"window": window, "period": period}
    )
    error = assert_error(response, 400, "invalid_request")
    assert "period" in error["message"]


@pytest.mark.parametrize(
    ("window", "period"),
    [("daily", "2021-01-01"), ("weekly", "2021-W01"), ("monthly", "2021-01")],
)
async def test_valid_period_without_data_is_empty(
    client: httpx.AsyncClient, make_board: MakeBoard, window: str, period: str
) -> None:
    board_id = await make_board(windows=["all-time", "daily", "weekly", "monthly"])
    await submit(client, board_id, "p1", 5)
    body = await get(client, f"/v1/boards/{board_id}/top", window=window, period=period)
    assert (body["window"], body["period"], body["total"], body["entries"]) == (
        window,
        period,
        0,
        [],
    )


async def test_player_in_period_without_data_is_404(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"])
    await submit(client, board_id, "p1", 5)
    response = await client.get(
        f"/v1/boards/{board_id}/players/p1", params={"period": "2021-01-01"}
    )
    assert_error(response, 404, "player_not_ranked")


@pytest.mark.parametrize(
    "path",
    ["top", "players/p1", "players/p1/around", "players/p1/friends", "rank-of?score=1", "periods"],
)
async def test_reads_on_unknown_board_are_404(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(f"/v1/boards/no-such-board-abc/{path}")
    assert_error(response, 404, "board_not_found")


# --- names -----------------------------------------------------------------------------


async def test_set_name_shows_in_entries(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    player = f"named-{board_id[-12:]}".replace(".", "-")
    await submit(client, board_id, player, 5)
    before = (await get(client, f"/v1/boards/{board_id}/top"))["entries"][0]
    assert before["name"] is None
    response = await client.put(
        f"/v1/players/{player}", json={"name": "kai_runs"}, headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"player_id": player, "name": "kai_runs", "segments": {}}
    assert (await get(client, f"/v1/boards/{board_id}/top"))["entries"][0]["name"] == "kai_runs"
    assert (await get(client, f"/v1/boards/{board_id}/players/{player}"))["name"] == "kai_runs"
    around = await get(client, f"/v1/boards/{board_id}/players/{player}/around")
    assert around["entries"][0]["name"] == "kai_runs"


async def test_set_name_again_replaces_it(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    player = f"renamed-{board_id[-12:]}".replace(".", "-")
    await submit(client, board_id, player, 5)
    for name in ("first", "Second Name ✓"):
        response = await client.put(f"/v1/players/{player}", json={"name": name}, headers=SERVER_H)
        assert response.status_code == 200, response.text
    assert (await get(client, f"/v1/boards/{board_id}/top"))["entries"][0]["name"] == (
        "Second Name ✓"
    )


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"name": ""}, id="empty"),
        pytest.param({"name": "   "}, id="blank"),
        pytest.param({"name": "x" * 65}, id="too-long"),
        pytest.param({"name": 5}, id="number"),
        pytest.param({"name": None}, id="null"),
        pytest.param({"name": "a\nb"}, id="control-char"),
        pytest.param({"nom": "x"}, id="wrong-field"),
        pytest.param({"name": "x", "extra": 1}, id="extra-field"),
        pytest.param(["x"], id="list"),
        pytest.param("x", id="string"),
    ],
)
async def test_set_name_bad_body_is_400(client: httpx.AsyncClient, body: Any) -> None:
    response = await client.put("/v1/players/p1", json=body, headers=SERVER_H)
    assert_error(response, 400, "invalid_request")


async def test_set_name_invalid_json_is_400(client: httpx.AsyncClient) -> None:
    response = await client.put(
        "/v1/players/p1",
        content=b"{name: x}",
        headers={**SERVER_H, "Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")


async def test_set_name_bad_player_id_is_400(client: httpx.AsyncClient) -> None:
    response = await client.put("/v1/players/bad.id", json={"name": "x"}, headers=SERVER_H)
    assert_error(response, 400, "invalid_request")


async def test_set_name_without_key_is_401(client: httpx.AsyncClient) -> None:
    response = await client.put("/v1/players/p1", json={"name": "x"})
    assert_error(response, 401, "unauthorized")


async def test_set_name_with_wrong_key_is_401(client: httpx.AsyncClient) -> None:
    response = await client.put(
        "/v1/players/p1", json={"name": "x"}, headers={"Authorization": "Bearer nope"}
    )
    assert_error(response, 401, "unauthorized")


# --- viewer ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["top", "players/p1", "players/p1/around", "players/p1/friends"])
async def test_viewer_without_server_key_is_401(
    client: httpx.AsyncClient, five: str, path: str
) -> None:
    response = await client.get(f"/v1/boards/{five}/{path}", params={"viewer": "p1"})
    assert_error(response, 401, "unauthorized")


async def test_an_unhidden_viewers_own_view_is_the_public_view(
    client: httpx.AsyncClient, five: str
) -> None:
    """Nobody in this board is banned or held: every own view equals the public read."""
    for path in ("top", "players/p3", "players/p3/around", "players/p3/friends"):
        params = {"ids": "p1,p4"} if path.endswith("friends") else {}
        public = await client.get(f"/v1/boards/{five}/{path}", params=params)
        own = await client.get(
            f"/v1/boards/{five}/{path}", params={**params, "viewer": "p3"}, headers=SERVER_H
        )
        assert own.status_code == 200, own.text
        assert own.json() == public.json()


async def test_approximate_rank_on_an_unsharded_board_is_the_exact_one(
    client: httpx.AsyncClient, five: str
) -> None:
    response = await client.get(f"/v1/boards/{five}/players/p3", params={"accuracy": "approx"})
    assert response.status_code == 200, response.text
    exact = await client.get(f"/v1/boards/{five}/players/p3", params={"accuracy": "exact"})
    assert exact.status_code == 200, exact.text
    assert response.json() == {**exact.json(), "approximate": False, "error_bound": 0}
    response = await client.get(f"/v1/boards/{five}/players/p3", params={"accuracy": "some"})
    error = assert_error(response, 400, "invalid_request")
    assert "accuracy" in error["message"]


async def test_viewer_bad_id_is_400(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(
        f"/v1/boards/{five}/top", params={"viewer": "bad id"}, headers=SERVER_H
    )
    error = assert_error(response, 400, "invalid_request")
    assert "viewer" in error["message"]


async def test_public_reads_with_a_wrong_key_are_401(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(
        f"/v1/boards/{five}/top", params={"viewer": "p1"}, headers={"Authorization": "Bearer x"}
    )
    assert_error(response, 401, "unauthorized")


# --- unknown routes ---------------------------------------------------------------------


async def test_unknown_path_is_404_with_error_body(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v1/nothing-here"), 404, "not_found")


async def test_wrong_method_has_error_body(client: httpx.AsyncClient) -> None:
    response = await client.delete("/v1/boards")
    assert response.status_code == 405
    assert set(response.json()["error"]) == {"code", "message"}


# --- operations ------------------------------------------------------------------------


async def test_healthz_is_200(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200


async def test_readyz_is_200_with_every_dependency_ok(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200, response.text
    checks = response.json()["checks"]
    assert set(checks) >= {"redis", "postgres", "nats"}
    assert all(state == "ok" for state in checks.values()), checks


async def test_metrics_exposes_request_latency(client: httpx.AsyncClient) -> None:
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "rankd_request_seconds" in response.text
    assert 'route="/healthz"' in response.text


async def test_openapi_lists_the_v1_paths(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    paths = set(response.json()["paths"])
    assert {
        "/v1/boards",
        "/v1/boards/{board_id}",
        "/v1/boards/{board_id}/runs",
        "/v1/boards/{board_id}/runs:batch",
        "/v1/boards/{board_id}/top",
        "/v1/boards/{board_id}/players/{player_id}",
        "/v1/boards/{board_id}/players/{player_id}/around",
        "/v1/boards/{board_id}/players/{player_id}/friends",
        "/v1/boards/{board_id}/rank-of",
        "/v1/boards/{board_id}/periods",
        "/v1/boards/{board_id}/events",
        "/v1/players/{player_id}",
    } <= paths
    events = response.json()["paths"]["/v1/boards/{board_id}/events"]["get"]
    assert "text/event-stream" in events["responses"]["200"]["content"]


async def test_docs_page_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


async def test_root_is_the_html_leaderboard_page(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "<html" in response.text.lower()
    # its assets come from the package, not a CDN
    assert 'src="/live.js"' in response.text and 'href="/live.css"' in response.text
    assert "http" not in response.text.replace("http-equiv", "")
    for path, media_type in (("/live.js", "text/javascript"), ("/live.css", "text/css")):
        asset = await client.get(path)
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(media_type)
        assert "EventSource" in asset.text or "disconnected" in asset.text


async def test_the_favicon_ships_with_the_package(client: httpx.AsyncClient) -> None:
    icon = await client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
    svg = await client.get("/favicon.svg")
    assert svg.status_code == 200 and svg.text.startswith("<svg")
    page = await client.get("/")
    assert 'href="/favicon.svg"' in page.text and 'href="/favicon.ico"' in page.text


async def test_player_bad_accuracy_is_400(client: httpx.AsyncClient, five: str) -> None:
    response = await client.get(f"/v1/boards/{five}/players/p1", params={"accuracy": "rough"})
    error = assert_error(response, 400, "invalid_request")
    assert "accuracy" in error["message"]
