"""Run submission against the real servers: standings, ranking rules, validation, batches."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import orjson
import pytest

from rankd.codec import Codec
from rankd.periods import SPAN_MS
from tests.support.common import SERVER_H, MakeBoard
from tests.support.wire import assert_error, daily_id, iso, monthly_id, now_ms, weekly_id

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
STANDING_KEYS = {
    "previous_rank",
    "window",
    "period",
    "segment",
    "status",
    "rank",
    "score",
    "achieved_at",
    "improved",
    "is_best",
}
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


# --- helpers ---------------------------------------------------------------------------


def same_day_pair(gap: timedelta) -> tuple[datetime, datetime]:
    """Two instants ``gap`` apart, about ten minutes ago, inside one UTC day."""
    later = now_ms() - timedelta(minutes=10)
    earlier = later - gap
    if earlier.date() != later.date():
        earlier = later.replace(hour=0, minute=0, second=1, microsecond=0)
        later = earlier + gap
    return earlier, later


def run(
    run_id: str, player_id: str, score: Any, ended_at: datetime | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"run_id": run_id, "player_id": player_id, "score": score}
    if ended_at is not None:
        body["ended_at"] = iso(ended_at)
    return body


async def post_run(client: httpx.AsyncClient, board_id: str, body: Any) -> httpx.Response:
    return await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)


async def submit(
    client: httpx.AsyncClient,
    board_id: str,
    run_id: str,
    player_id: str,
    score: int,
    ended_at: datetime | None = None,
) -> dict[str, Any]:
    response = await post_run(client, board_id, run(run_id, player_id, score, ended_at))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def post_batch(client: httpx.AsyncClient, board_id: str, body: Any) -> httpx.Response:
    return await client.post(f"/v1/boards/{board_id}/runs:batch", json=body, headers=SERVER_H)


async def top(client: httpx.AsyncClient, board_id: str, **params: Any) -> dict[str, Any]:
    response = await client.get(f"/v1/boards/{board_id}/top", params={"n": 100, **params})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def board(client: httpx.AsyncClient, board_id: str) -> dict[str, Any]:
    result: dict[str, Any] = (await client.get(f"/v1/boards/{board_id}")).json()
    return result


def by_window(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["window"]: s for s in result["standings"]}


# --- response shape --------------------------------------------------------------------


async def test_submit_response_matches_contract_example(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # max_score 2000 leaves room for 1 ms time units, so achieved_at is the exact ended_at
    board_id = await make_board(windows=["all-time", "weekly"], max_score=2000)
    ended = now_ms() - timedelta(minutes=10)
    response = await post_run(client, board_id, run("r-7f3a91", "48213377", 1284, ended))
    assert response.status_code == 200, response.text
    assert response.json() == {
        "run_id": "r-7f3a91",
        "player_id": "48213377",
        "score": 1284,
        "standings": [
            {
                "window": "all-time",
                "period": "all-time",
                "segment": None,
                "status": "ranked",
                "rank": 1,
                "previous_rank": None,
                "score": 1284,
                "achieved_at": iso(ended),
                "improved": True,
                "is_best": True,
            },
            {
                "window": "weekly",
                "period": weekly_id(ended),
                "segment": None,
                "status": "ranked",
                "rank": 1,
                "previous_rank": None,
                "score": 1284,
                "achieved_at": iso(ended),
                "improved": True,
                "is_best": True,
            },
        ],
    }


async def test_standing_has_exactly_the_contract_fields(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily", "weekly", "monthly"])
    result = await submit(client, board_id, "r1", "p1", 1284500)
    assert set(result) == {"run_id", "player_id", "score", "standings"}
    for standing in result["standings"]:
        assert set(standing) == STANDING_KEYS, standing
        assert TIME_RE.match(standing["achieved_at"]), standing
        assert isinstance(standing["rank"], int) and standing["rank"] == 1
        assert standing["improved"] is True and standing["is_best"] is True


async def test_achieved_at_is_the_exact_ended_at_and_decides_ties_inside_a_time_unit(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    """Reads and submits report the run's exact end time (ms), not its time unit's start;
    equal scores within one unit of the composite (about 6 minutes for all-time with the
    default max_score) still rank the earlier run first: tie_resolution_ms is 1."""
    board_id = await make_board(windows=["all-time", "daily"])
    resolution = (await board(client, board_id))["tie_resolution_ms"]
    assert resolution == {"all-time": 1, "daily": 1}
    unit_ms = Codec.create(1_000_000_000, "desc", SPAN_MS["all-time"]).resolution_ms
    assert unit_ms > 60_000
    unit = timedelta(milliseconds=unit_ms)
    bucket_start = EPOCH + (now_ms() - timedelta(minutes=20) - EPOCH) // unit * unit
    if (bucket_start + unit / 2).date() != bucket_start.date():
        bucket_start -= unit  # both runs in one day, so in one daily period
    first, second = bucket_start + timedelta(milliseconds=7), bucket_start + unit / 2
    # the runs' daily period: near midnight it is yesterday's, not the current one
    day = second.date().isoformat()
    # "pb" would win on the player id rule; the earlier "pa" must rank first
    result = by_window(await submit(client, board_id, "r1", "pb", 5, second))
    assert result["all-time"]["achieved_at"] == iso(second)
    assert result["daily"]["achieved_at"] == iso(second)
    result = by_window(await submit(client, board_id, "r2", "pa", 5, first))
    assert result["all-time"]["rank"] == 1
    entries = (await top(client, board_id, window="all-time"))["entries"]
    assert [(e["player_id"], e["achieved_at"]) for e in entries] == [
        ("pa", iso(first)),
        ("pb", iso(second)),
    ]
    for window, period in (("all-time", {}), ("daily", {"period": day})):
        params = {"window": window, **period}
        me = await client.get(f"/v1/boards/{board_id}/players/pb", params=params)
        assert (me.json()["rank"], me.json()["achieved_at"]) == (2, iso(second))
        around = await client.get(f"/v1/boards/{board_id}/players/pb/around", params=params)
        assert [(e["player_id"], e["achieved_at"]) for e in around.json()["entries"]] == [
            ("pa", iso(first)),
            ("pb", iso(second)),
        ]
        friends = await client.get(
            f"/v1/boards/{board_id}/players/pb/friends", params={**params, "ids": "pa"}
        )
        assert [(e["player_id"], e["achieved_at"]) for e in friends.json()["entries"]] == [
            ("pa", iso(first)),
            ("pb", iso(second)),
        ]


async def test_ended_at_with_offset_is_converted_to_utc(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time"], max_score=1000)
    ended = now_ms() - timedelta(minutes=10)
    local = ended.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert local.isoformat().endswith("+05:30")
    body = {"run_id": "r1", "player_id": "p1", "score": 5, "ended_at": local.isoformat()}
    response = await post_run(client, board_id, body)
    assert response.status_code == 200, response.text
    assert response.json()["standings"][0]["achieved_at"] == iso(ended)


async def test_ended_at_defaults_to_receive_time(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"], max_score=1000)
    before = now_ms()
    result = by_window(await submit(client, board_id, "r1", "p1", 5))
    after = now_ms() + timedelta(milliseconds=1)
    achieved = datetime.fromisoformat(result["all-time"]["achieved_at"])
    assert before <= achieved <= after
    assert result["daily"]["period"] in {daily_id(before), daily_id(after)}


async def test_one_standing_per_window_in_board_window_order(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    windows = ["monthly", "all-time", "daily", "weekly"]
    board_id = await make_board(windows=windows)
    result = await submit(client, board_id, "r1", "p1", 10)
    assert [s["window"] for s in result["standings"]] == windows


async def test_period_ids_follow_ended_at(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board(windows=["all-time", "daily", "weekly", "monthly"])
    ended = now_ms() - timedelta(minutes=10)
    result = by_window(await submit(client, board_id, "r1", "p1", 10, ended))
    assert result["all-time"]["period"] == "all-time"
    assert result["daily"]["period"] == daily_id(ended)
    assert result["weekly"]["period"] == weekly_id(ended)
    assert result["monthly"]["period"] == monthly_id(ended)
    assert all(s["status"] == "ranked" for s in result.values())


async def test_top_level_score_is_the_runs_score_not_the_entry(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    await submit(client, board_id, "r1", "p1", 50)
    result = await submit(client, board_id, "r2", "p1", 20)
    assert result["run_id"] == "r2"
    assert result["score"] == 20
    assert result["standings"][0]["score"] == 50


# --- best policy -----------------------------------------------------------------------


async def test_resending_the_best_run_is_not_improved_but_is_best(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    ended = now_ms() - timedelta(minutes=10)
    first = await submit(client, board_id, "r1", "p1", 100, ended)
    again = await submit(client, board_id, "r1", "p1", 100, ended)
    for standing_before, standing in zip(first["standings"], again["standings"], strict=True):
        assert standing["improved"] is False
        assert standing["is_best"] is True
        assert standing["rank"] == 1
        assert standing["score"] == 100
        assert standing["achieved_at"] == standing_before["achieved_at"]
    assert (await top(client, board_id))["total"] == 1


async def test_lower_later_run_leaves_the_entry_unchanged(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"], max_score=1000)
    earlier, later = same_day_pair(timedelta(minutes=1))
    first = await submit(client, board_id, "r1", "p1", 100, earlier)
    lower = await submit(client, board_id, "r2", "p1", 60, later)
    for standing in lower["standings"]:
        assert standing["improved"] is False
        assert standing["is_best"] is False
        assert standing["score"] == 100
        assert standing["achieved_at"] == iso(earlier)
    assert first["standings"][0]["achieved_at"] == iso(earlier)
    [entry] = (await top(client, board_id))["entries"]
    assert (entry["score"], entry["achieved_at"]) == (100, iso(earlier))


async def test_higher_run_improves_the_entry(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000)
    earlier, later = same_day_pair(timedelta(minutes=1))
    await submit(client, board_id, "r1", "p1", 100, earlier)
    higher = (await submit(client, board_id, "r2", "p1", 150, later))["standings"][0]
    assert (higher["improved"], higher["is_best"], higher["score"]) == (True, True, 150)
    assert higher["achieved_at"] == iso(later)


async def test_desc_board_ranks_higher_score_first(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    for player, score in (("a", 30), ("b", 10), ("c", 20)):
        await submit(client, board_id, f"r-{player}", player, score)
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["rank"]) for e in entries] == [("a", 1), ("c", 2), ("b", 3)]


async def test_asc_board_ranks_lower_score_first(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(order="asc", max_score=100_000)
    ranks = {}
    for player, score in (("a", 30), ("b", 10), ("c", 20)):
        ranks[player] = (await submit(client, board_id, f"r-{player}", player, score))["standings"][
            0
        ]["rank"]
    assert ranks == {"a": 1, "b": 1, "c": 2}  # rank at the time of each submit
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("b", 10), ("c", 20), ("a", 30)]


async def test_asc_board_improves_on_lower_score(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(order="asc", max_score=100_000)
    await submit(client, board_id, "r1", "p1", 500)
    worse = (await submit(client, board_id, "r2", "p1", 900))["standings"][0]
    assert (worse["improved"], worse["is_best"], worse["score"]) == (False, False, 500)
    better = (await submit(client, board_id, "r3", "p1", 300))["standings"][0]
    assert (better["improved"], better["is_best"], better["score"]) == (True, True, 300)


async def test_asc_board_accepts_score_zero_and_max(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(order="asc", max_score=1000)
    await submit(client, board_id, "r1", "slow", 1000)
    await submit(client, board_id, "r2", "fast", 0)
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("fast", 0), ("slow", 1000)]


async def test_equal_scores_rank_the_earlier_run_first(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"])
    assert (await board(client, board_id))["tie_resolution_ms"]["daily"] == 1
    earlier, later = same_day_pair(timedelta(seconds=5))
    # "z" would win an exact tie (Redis orders equal members descending); time must decide
    late = await submit(client, board_id, "r-late", "z-late", 500, later)
    assert late["standings"][0]["rank"] == 1
    early = await submit(client, board_id, "r-early", "a-early", 500, earlier)
    assert early["standings"][0]["rank"] == 1
    result = await top(client, board_id, period=daily_id(later))
    assert [e["player_id"] for e in result["entries"]] == ["a-early", "z-late"]
    assert [e["rank"] for e in result["entries"]] == [1, 2]


async def test_equal_scores_rank_the_earlier_run_first_on_asc_board(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"], order="asc")
    earlier, later = same_day_pair(timedelta(seconds=5))
    await submit(client, board_id, "r-late", "z-late", 500, later)
    await submit(client, board_id, "r-early", "a-early", 500, earlier)
    result = await top(client, board_id, period=daily_id(later))
    assert [e["player_id"] for e in result["entries"]] == ["a-early", "z-late"]


async def test_score_zero_is_accepted(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    standing = (await submit(client, board_id, "r1", "p1", 0))["standings"][0]
    assert (standing["score"], standing["rank"]) == (0, 1)


async def test_score_equal_to_max_run_score_is_accepted(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000, max_run_score=100)
    standing = (await submit(client, board_id, "r1", "p1", 100))["standings"][0]
    assert standing["score"] == 100


async def test_largest_max_score_round_trips_exactly(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=2**53 - 1)
    standing = (await submit(client, board_id, "r1", "p1", 2**53 - 1))["standings"][0]
    assert standing["score"] == 2**53 - 1
    [entry] = (await top(client, board_id))["entries"]
    assert entry["score"] == 2**53 - 1


# --- sum policy ------------------------------------------------------------------------


async def test_sum_board_adds_runs(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board(policy="sum", windows=["all-time", "daily"])
    first = await submit(client, board_id, "r1", "p1", 10)
    second = await submit(client, board_id, "r2", "p1", 5)
    for standing in first["standings"]:
        assert (standing["score"], standing["improved"], standing["is_best"]) == (10, True, True)
    for standing in second["standings"]:
        assert (standing["score"], standing["improved"], standing["is_best"]) == (15, True, True)
    [entry] = (await top(client, board_id))["entries"]
    assert entry["score"] == 15


async def test_sum_board_counts_a_run_id_once(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # like a best board's resend: the counted run answers improved false, is_best true
    board_id = await make_board(policy="sum", windows=["all-time", "daily"])
    await submit(client, board_id, "r1", "p1", 10)
    resend = await submit(client, board_id, "r1", "p1", 10)
    for standing in resend["standings"]:
        assert standing["score"] == 10
        assert standing["improved"] is False
        assert standing["is_best"] is True
        assert standing["rank"] == 1
    [entry] = (await top(client, board_id))["entries"]
    assert entry["score"] == 10


async def test_sum_board_zero_score_run_is_counted(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(policy="sum")
    standing = (await submit(client, board_id, "r1", "p1", 0))["standings"][0]
    assert (standing["score"], standing["is_best"], standing["rank"]) == (0, True, 1)
    assert (await top(client, board_id))["total"] == 1


async def test_sum_board_total_saturates_at_max_score(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(policy="sum", max_score=100)
    await submit(client, board_id, "r1", "p1", 70)
    standing = (await submit(client, board_id, "r2", "p1", 70))["standings"][0]
    assert standing["score"] == 100


async def test_sum_board_ranks_by_total(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board(policy="sum")
    await submit(client, board_id, "a1", "a", 30)
    await submit(client, board_id, "b1", "b", 20)
    standing = (await submit(client, board_id, "b2", "b", 20))["standings"][0]
    assert (standing["score"], standing["rank"]) == (40, 1)
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("b", 40), ("a", 30)]


# --- closed periods --------------------------------------------------------------------


async def test_run_in_period_past_grace_is_closed(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"], grace_seconds=0, max_score=1000)
    ended = now_ms() - timedelta(days=2)
    result = by_window(await submit(client, board_id, "r1", "p1", 10, ended))
    daily = result["daily"]
    assert daily["status"] == "closed"
    assert daily["period"] == daily_id(ended)
    assert daily.get("rank") is None
    assert daily["improved"] is False
    all_time = result["all-time"]
    assert (all_time["status"], all_time["rank"], all_time["score"]) == ("ranked", 1, 10)
    assert all_time["achieved_at"] == iso(ended)
    closed_top = await top(client, board_id, window="daily", period=daily_id(ended))
    assert closed_top["total"] == 0


async def test_run_within_grace_is_still_ranked(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # ended two days ago, with a grace of three days: the period still takes it
    board_id = await make_board(windows=["daily"], grace_seconds=3 * 86_400)
    ended = now_ms() - timedelta(days=2)
    standing = (await submit(client, board_id, "r1", "p1", 10, ended))["standings"][0]
    assert (standing["status"], standing["rank"]) == ("ranked", 1)
    result = await top(client, board_id, period=daily_id(ended))
    assert result["total"] == 1


async def test_closed_sum_board_run_is_closed_in_daily(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(policy="sum", windows=["weekly", "daily"], grace_seconds=0)
    ended = now_ms() - timedelta(days=15)
    result = by_window(await submit(client, board_id, "r1", "p1", 10, ended))
    assert result["daily"]["status"] == "closed"
    assert result["weekly"]["status"] == "closed"


# --- validation ------------------------------------------------------------------------

BAD_RUNS = [
    pytest.param({"score": -1}, "score", id="negative-score"),
    pytest.param({"score": 12.5}, "score", id="float-score"),
    pytest.param({"score": 12.0}, "score", id="float-integral-score"),
    pytest.param({"score": True}, "score", id="bool-score"),
    pytest.param({"score": "12"}, "score", id="string-score"),
    pytest.param({"score": None}, "score", id="null-score"),
    pytest.param({"score": [1]}, "score", id="list-score"),
    pytest.param({"run_id": None}, "run_id", id="missing-run_id"),
    pytest.param({"run_id": ""}, "run_id", id="empty-run_id"),
    pytest.param({"run_id": "r 1"}, "run_id", id="space-in-run_id"),
    pytest.param({"run_id": "r/1"}, "run_id", id="slash-in-run_id"),
    pytest.param({"run_id": "r" * 129}, "run_id", id="too-long-run_id"),
    pytest.param({"run_id": 17}, "run_id", id="numeric-run_id"),
    pytest.param({"player_id": None}, "player_id", id="missing-player_id"),
    pytest.param({"player_id": "p" * 65}, "player_id", id="too-long-player_id"),
    pytest.param({"player_id": "p.1"}, "player_id", id="dot-in-player_id"),
    pytest.param({"player_id": ""}, "player_id", id="empty-player_id"),
    pytest.param({"player_id": 48213377}, "player_id", id="numeric-player_id"),
    pytest.param({"ended_at": "2026-11-03T18:22:07"}, "ended_at", id="ended_at-no-offset"),
    pytest.param({"ended_at": "yesterday"}, "ended_at", id="ended_at-garbage"),
    pytest.param({"ended_at": "2026-11-03"}, "ended_at", id="ended_at-date-only"),
    pytest.param({"ended_at": ""}, "ended_at", id="ended_at-empty"),
    pytest.param({"ended_at": 1793729527123}, "ended_at", id="ended_at-number"),
    pytest.param({"ended_at": "2019-12-31T23:59:59.000Z"}, "ended_at", id="ended_at-before-2020"),
    pytest.param({"colour": "red"}, "colour", id="unknown-field"),
]


@pytest.mark.parametrize(("change", "field"), BAD_RUNS)
async def test_bad_run_is_400_invalid_request_naming_the_field(
    client: httpx.AsyncClient, make_board: MakeBoard, change: dict[str, Any], field: str
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    body = {"run_id": "r1", "player_id": "p1", "score": 10, **change}
    body = {k: v for k, v in body.items() if v is not None}
    error = assert_error(await post_run(client, board_id, body), 400, "invalid_request")
    assert field in error["message"], error
    assert (await top(client, board_id))["total"] == 0
    assert (await top(client, board_id, window="daily"))["total"] == 0


async def test_ended_at_far_in_the_future_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    body = run("r1", "p1", 10, now_ms() + timedelta(hours=1))
    error = assert_error(await post_run(client, board_id, body), 400, "invalid_request")
    assert "ended_at" in error["message"]
    assert (await top(client, board_id))["total"] == 0


async def test_ended_at_slightly_in_the_future_is_accepted(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    await submit(client, board_id, "r1", "p1", 10, now_ms() + timedelta(seconds=30))


@pytest.mark.parametrize(
    "body",
    [pytest.param([], id="list"), pytest.param("run", id="string"), pytest.param(7, id="number")],
)
async def test_non_object_run_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard, body: Any
) -> None:
    board_id = await make_board()
    assert_error(await post_run(client, board_id, body), 400, "invalid_request")


async def test_invalid_json_run_is_400(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    response = await client.post(
        f"/v1/boards/{board_id}/runs",
        content=b'{"run_id": "r1", "player_id": ',
        headers={**SERVER_H, "Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")
    assert (await top(client, board_id))["total"] == 0


async def test_score_above_max_run_score_is_400_score_out_of_range(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000, max_run_score=100)
    error = assert_error(
        await post_run(client, board_id, run("r1", "p1", 101)), 400, "score_out_of_range"
    )
    assert "100" in error["message"]
    assert (await top(client, board_id))["total"] == 0


async def test_score_above_max_score_is_400_score_out_of_range(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000)
    response = await post_run(client, board_id, run("r1", "p1", 2**60))
    assert_error(response, 400, "score_out_of_range")


async def test_integer_score_beyond_64_bits_is_score_out_of_range(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # 10**20 is a JSON integer; it is out of range, not "not a non-negative integer"
    board_id = await make_board(max_score=1000)
    response = await client.post(
        f"/v1/boards/{board_id}/runs",
        content=b'{"run_id": "r1", "player_id": "p1", "score": 100000000000000000000}',
        headers={**SERVER_H, "Content-Type": "application/json"},
    )
    assert_error(response, 400, "score_out_of_range")


async def test_rejected_run_leaves_existing_entry_unchanged(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000, max_run_score=100)
    await submit(client, board_id, "r1", "p1", 50)
    before = await top(client, board_id)
    assert_error(await post_run(client, board_id, run("r2", "p1", 101)), 400, "score_out_of_range")
    assert_error(await post_run(client, board_id, run("r3", "p1", -1)), 400, "invalid_request")
    assert await top(client, board_id) == before


async def test_body_over_1_mib_is_413(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    body = {"run_id": "r1", "player_id": "p1", "score": 10, "pad": "x" * (1 << 20)}
    assert_error(await post_run(client, board_id, body), 413, "body_too_large")
    assert (await top(client, board_id))["total"] == 0


async def test_chunked_body_over_1_mib_is_413(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"run_id": "r1", "player_id": "p1", "score": 10, "pad": "'
        for _ in range(20):
            yield b"x" * 65536
        yield b'"}'

    response = await client.post(
        f"/v1/boards/{board_id}/runs",
        content=chunks(),
        headers={**SERVER_H, "Content-Type": "application/json"},
    )
    assert_error(response, 413, "body_too_large")
    assert (await top(client, board_id))["total"] == 0


async def test_batch_body_over_1_mib_is_413(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    runs = [run(f"r{i}", f"p{i}", i) | {"ended_at": "x" * 1200} for i in range(900)]
    assert len(orjson.dumps({"runs": runs})) > 1 << 20
    assert_error(await post_batch(client, board_id, {"runs": runs}), 413, "body_too_large")


# --- batch -----------------------------------------------------------------------------


async def test_batch_returns_one_result_per_run_in_order(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"], max_score=1000, max_run_score=500)
    runs = [
        run("ok-1", "p1", 10),
        run("neg", "p2", -1),
        run("ok-2", "p3", 30),
        "not a run",
        {"player_id": "p4", "score": 5},
        run("big", "p5", 501),
        run("bad id!", "p6", 5),
        run("ok-3", "p7", 20),
    ]
    response = await post_batch(client, board_id, {"runs": runs})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert len(results) == len(runs)
    assert [r["run_id"] for r in results] == [
        "ok-1",
        "neg",
        "ok-2",
        None,
        None,
        "big",
        "bad id!",
        "ok-3",
    ]
    for index in (0, 2, 7):
        assert "error" not in results[index]
        standings = results[index]["standings"]
        assert [s["window"] for s in standings] == ["all-time", "daily"]
        assert all(s["status"] == "ranked" for s in standings)
    expected_codes = {
        1: "invalid_request",
        3: "invalid_request",
        4: "invalid_request",
        5: "score_out_of_range",
        6: "invalid_request",
    }
    for index, code in expected_codes.items():
        assert "standings" not in results[index], results[index]
        assert set(results[index]["error"]) == {"code", "message"}
        assert results[index]["error"]["code"] == code
    assert "score" in results[1]["error"]["message"]
    assert "run_id" in results[4]["error"]["message"]
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("p3", 30), ("p7", 20), ("p1", 10)]


async def test_batch_with_the_same_player_matches_sequential_submits(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    config = {"windows": ["all-time", "daily"]}
    batch_board = await make_board(**config)
    single_board = await make_board(**config)
    base = now_ms() - timedelta(minutes=10)
    runs = [
        run("r1", "p1", 10, base - timedelta(seconds=40)),
        run("r2", "p1", 30, base - timedelta(seconds=30)),
        run("r3", "p1", 20, base - timedelta(seconds=20)),
        run("r4", "p2", 25, base - timedelta(seconds=10)),
        run("r5", "p2", 35, base),
        run("r2", "p1", 30, base - timedelta(seconds=30)),
    ]
    response = await post_batch(client, batch_board, {"runs": runs})
    assert response.status_code == 200, response.text
    batch_standings = [r["standings"] for r in response.json()["results"]]
    sequential = [(await post_run(client, single_board, r)).json()["standings"] for r in runs]
    assert batch_standings == sequential
    all_time = [s[0] for s in batch_standings]
    assert [(s["score"], s["improved"], s["is_best"]) for s in all_time[:3]] == [
        (10, True, True),
        (30, True, True),
        (30, False, False),
    ]
    assert [s["rank"] for s in all_time] == [1, 1, 1, 2, 1, 2]
    assert (all_time[5]["improved"], all_time[5]["is_best"]) == (False, True)
    assert await top(client, batch_board) == {
        **(await top(client, single_board)),
        "board_id": batch_board,
    }


async def test_sum_batch_counts_a_repeated_run_id_once(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(policy="sum")
    runs = [run("r1", "p1", 10), run("r2", "p1", 5), run("r1", "p1", 10)]
    response = await post_batch(client, board_id, {"runs": runs})
    results = response.json()["results"]
    standings = [r["standings"][0] for r in results]
    assert [(s["score"], s["improved"], s["is_best"]) for s in standings] == [
        (10, True, True),
        (15, True, True),
        (15, False, True),
    ]


async def test_empty_batch_is_200_with_no_results(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    response = await post_batch(client, board_id, {"runs": []})
    assert response.status_code == 200, response.text
    assert response.json() == {"results": []}


async def test_batch_of_1000_runs_is_accepted(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    runs = [run(f"r{i}", f"p{i}", i) for i in range(1000)]
    response = await post_batch(client, board_id, {"runs": runs})
    assert response.status_code == 200, response.text
    assert len(response.json()["results"]) == 1000
    assert (await top(client, board_id))["total"] == 1000


async def test_batch_of_more_than_1000_runs_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    runs = [run(f"r{i}", f"p{i}", i) for i in range(1001)]
    error = assert_error(await post_batch(client, board_id, {"runs": runs}), 400, "invalid_request")
    assert "1000" in error["message"]
    assert (await top(client, board_id))["total"] == 0


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-runs"),
        pytest.param({"run": []}, id="misspelt"),
        pytest.param({"runs": {"run_id": "r"}}, id="runs-not-list"),
        pytest.param({"runs": [], "extra": 1}, id="extra-field"),
        pytest.param([{"run_id": "r1", "player_id": "p1", "score": 1}], id="bare-list"),
    ],
)
async def test_batch_body_without_runs_list_is_400(
    client: httpx.AsyncClient, make_board: MakeBoard, body: Any
) -> None:
    board_id = await make_board()
    assert_error(await post_batch(client, board_id, body), 400, "invalid_request")
    assert (await top(client, board_id))["total"] == 0


async def test_batch_needs_server_key(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    response = await client.post(
        f"/v1/boards/{board_id}/runs:batch", json={"runs": [run("r1", "p1", 1)]}
    )
    assert_error(response, 401, "unauthorized")
    assert (await top(client, board_id))["total"] == 0


async def test_sum_all_time_counts_late_runs_once_however_late(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    """Redis remembers counted run ids for a horizon (max(grace, 1 day)); older runs are
    decided by PostgreSQL. Runs 1 hour, 3 days and 40 days late, each sent twice (and the
    oldest a third time), are each counted once, and the answers say so."""
    board_id = await make_board(policy="sum", windows=["all-time"])
    late = {"h1": timedelta(hours=1), "d3": timedelta(days=3), "d40": timedelta(days=40)}
    ended = {run_id: now_ms() - delay for run_id, delay in late.items()}
    total = 0
    for i, run_id in enumerate(late):
        score = 10**i
        first = (await submit(client, board_id, run_id, "p1", score, ended[run_id]))["standings"]
        total += score
        assert first[0]["status"] == "ranked", first
        assert (first[0]["score"], first[0]["improved"], first[0]["is_best"]) == (total, True, True)
        again = (await submit(client, board_id, run_id, "p1", score, ended[run_id]))["standings"]
        assert (again[0]["score"], again[0]["improved"], again[0]["is_best"]) == (
            total,
            False,
            True,
        )
    third = await submit(client, board_id, "d40", "p1", 100, ended["d40"])
    assert third["standings"][0]["score"] == 111
    body = await top(client, board_id)
    assert (body["total"], body["entries"][0]["score"]) == (1, 111)
    # the latest counted run's end time is the entry's time
    assert body["entries"][0]["achieved_at"] == iso(ended["h1"])


async def test_batch_of_only_invalid_runs_is_200_with_errors(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    runs = [run("a", "p1", -5), run("b", "p1", "x")]
    response = await post_batch(client, board_id, {"runs": runs})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [(r["run_id"], r["error"]["code"]) for r in results] == [
        ("a", "invalid_request"),
        ("b", "invalid_request"),
    ]
    assert (await top(client, board_id))["total"] == 0


async def test_non_utf8_body_is_400(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    response = await client.post(
        f"/v1/boards/{board_id}/runs",
        content=b'{"run_id": "r1", "player_id": "\xff\xfe", "score": 1}',
        headers={**SERVER_H, "Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "style",
    ["no-fraction", "one-digit-fraction", "nanoseconds", "offset", "lowercase-t-and-z"],
)
async def test_every_rfc3339_form_of_ended_at_is_accepted(
    client: httpx.AsyncClient, make_board: MakeBoard, style: str
) -> None:
    board_id = await make_board(max_score=1000)
    ended = (now_ms() - timedelta(minutes=10)).replace(microsecond=100_000)
    base = ended.strftime("%Y-%m-%dT%H:%M:%S")
    text = {
        "no-fraction": base + "Z",
        "one-digit-fraction": base + ".1Z",
        "nanoseconds": base + ".100000999Z",
        "offset": (ended + timedelta(hours=-3)).strftime("%Y-%m-%dT%H:%M:%S") + ".1-03:00",
        "lowercase-t-and-z": base.replace("T", "t") + ".1z",
    }[style]
    body = {"run_id": "r1", "player_id": "p1", "score": 5, "ended_at": text}
    response = await post_run(client, board_id, body)
    assert response.status_code == 200, (text, response.text)
    expected = ended.replace(microsecond=0) if style == "no-fraction" else ended
    assert response.json()["standings"][0]["achieved_at"] == iso(expected)


async def test_sum_board_refuses_another_players_reuse_of_a_run_id(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # Contract v1.2: a run_id already seen on the board with another player is a conflict;
    # it neither borrows nor suppresses a count (tests/integration/services/test_run_conflict.py
    # has the rest).
    board_id = await make_board(policy="sum", windows=["all-time", "daily"])
    await submit(client, board_id, "r1", "p1", 10)
    response = await post_run(client, board_id, run("r1", "p2", 7))
    assert response.status_code == 409 and response.json()["error"]["code"] == "run_conflict"
    again = await submit(client, board_id, "r1", "p1", 10)
    assert [s["improved"] for s in again["standings"]] == [False, False]
    entries = (await top(client, board_id))["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("p1", 10)]


async def test_concurrent_resends_on_sum_board_count_the_run_once(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(policy="sum", windows=["all-time", "daily"])
    responses = await asyncio.gather(
        *(post_run(client, board_id, run("r1", "p1", 10)) for _ in range(20))
    )
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    standings = [r.json()["standings"][0] for r in responses]
    assert [s["improved"] for s in standings].count(True) == 1
    assert all(s["is_best"] and s["score"] == 10 for s in standings), standings
    for window in ("all-time", "daily"):
        [entry] = (await top(client, board_id, window=window))["entries"]
        assert entry["score"] == 10


async def test_concurrent_runs_on_best_board_keep_the_max(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    scores = [17, 93, 5, 88, 93, 41, 60, 2, 75, 30]
    responses = await asyncio.gather(
        *(post_run(client, board_id, run(f"r{i}", "p1", s)) for i, s in enumerate(scores))
    )
    assert all(r.status_code == 200 for r in responses)
    for window in ("all-time", "daily"):
        [entry] = (await top(client, board_id, window=window))["entries"]
        assert entry["score"] == 93


async def test_a_resend_without_ended_at_keeps_its_first_receipt_time(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    """ended_at defaults to the time the service first received the run: a resend (within
    RANKD_RUN_MEMORY_S) reports the same entry in every window."""
    board_id = await make_board(windows=["all-time", "daily"], max_score=1000)
    body = {"run_id": "no-end", "player_id": "p1", "score": 5}
    first = (await post_run(client, board_id, body)).json()["standings"]
    await asyncio.sleep(0.05)
    again = (await post_run(client, board_id, body)).json()["standings"]
    assert [s["achieved_at"] for s in again] == [s["achieved_at"] for s in first]
    assert [(s["improved"], s["is_best"]) for s in again] == [(False, True), (False, True)]
    # another run is another first receipt
    other = (
        await post_run(client, board_id, {**body, "run_id": "no-end-2", "player_id": "p2"})
    ).json()
    assert other["standings"][1]["achieved_at"] != first[1]["achieved_at"]
