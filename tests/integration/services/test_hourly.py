"""The `hourly` window (CONTRACT v1.3): UTC hours as periods (`2026-11-03T18`), ranked
apart, listed, frozen into the archive once closed, and read the same from there and after
a rebuild; on an unsharded board and on one split over 4 shards."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from rankd.runtime import Runtime
from tests.integration.services.test_seasons import job
from tests.support.common import ADMIN_H, MakeBoard
from tests.support.durable import submit, wait_consumer_idle


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


def hour_id(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H")


def ranked(page: dict[str, Any]) -> list[tuple[str, int]]:
    return [(e["player_id"], e["score"]) for e in page["entries"]]


async def test_hours_are_ranked_apart_listed_frozen_and_rebuilt(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    board = await make_board(
        windows=["all-time", "hourly"], grace_seconds=86_400, retention_days={"hourly": 0}
    )
    now = datetime.now(UTC)
    if now.minute == 59 and now.second >= 50:  # not across an hour's end mid-test
        await asyncio.sleep(61 - now.second)
        now = datetime.now(UTC)
    earlier = now - timedelta(hours=2)
    await submit(client, board, "e1", "p1", 300, earlier)
    await submit(client, board, "e2", "p2", 50, earlier)
    answer = await submit(client, board, "n1", "p1", 100, now)
    await submit(client, board, "n2", "p2", 200, now)
    hourly = [s for s in answer["standings"] if s["window"] == "hourly"]
    assert [(s["period"], s["rank"]) for s in hourly] == [(hour_id(now), 1)]

    path = f"/v1/boards/{board}/top"

    async def reads() -> list[Any]:
        found = []
        for params in (
            {"window": "hourly"},
            {"window": "hourly", "period": hour_id(now)},
            {"window": "hourly", "period": hour_id(earlier)},
            {"window": "all-time"},
        ):
            response = await client.get(path, params=params)
            assert response.status_code == 200, response.text
            found.append(ranked(response.json()))
        return found

    expected = [
        [("p2", 200), ("p1", 100)],
        [("p2", 200), ("p1", 100)],
        [("p1", 300), ("p2", 50)],
        [("p1", 300), ("p2", 200)],
    ]
    assert await reads() == expected
    listed = (await client.get(f"/v1/boards/{board}/periods", params={"window": "hourly"})).json()
    hours = {p["period"]: p for p in listed["periods"]}
    assert {hour_id(now), hour_id(earlier)} <= set(hours)
    assert hours[hour_id(earlier)]["starts_at"] == earlier.strftime("%Y-%m-%dT%H:00:00.000Z")

    # bad hour ids are refused whole
    for bad in (f"{hour_id(now)[:-3]}T24", hour_id(now) + "\n", hour_id(now)[:-3], "2026-W45"):
        response = await client.get(path, params={"window": "hourly", "period": bad})
        assert response.status_code == 400, (bad, response.text)

    # the earlier hour closes: frozen into the archive, it leaves Redis and reads the same.
    # The log consumer first applies the runs: it decides a run's periods by the config it
    # finds, so a run still in the log once the grace is 0 would count as late there
    await wait_consumer_idle(client, runtime)
    response = await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
    assert response.status_code == 200, response.text

    async def statuses() -> dict[str, str]:
        params = {"window": "hourly"}
        listed = (await client.get(f"/v1/boards/{board}/periods", params=params)).json()
        return {p["period"]: p["status"] for p in listed["periods"]}

    # the consumer has applied this board's runs (above); the pass is told so, as
    # test_seasons' job is, rather than read the whole shared log's ack floor

    async def all_applied() -> int | None:
        return None

    # and a pass that finds the hour frozen meanwhile (by the service's own job) archives
    # it on the next
    deadline = time.monotonic() + 30
    while True:
        report = await job(runtime, applied_through=all_applied).run_pass(boards=[board])
        if (found := await statuses())[hour_id(earlier)] == "archived":
            break
        assert time.monotonic() < deadline, (found, report)
        await asyncio.sleep(0.5)
    assert await reads() == expected
    # a run that ended in a closed hour does not count there; it still counts all-time
    late = await submit(client, board, "late", "p3", 999, earlier)
    status = {s["window"]: s["status"] for s in late["standings"]}
    assert status["hourly"] == "closed" and status["all-time"] == "ranked"
    expected[3] = [("p3", 999), *expected[3]]

    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board)
    assert await reads() == expected


async def test_an_hourly_retention_is_taken_and_a_bad_one_refused(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["hourly"], retention_days={"hourly": 2})
    config = (await client.get(f"/v1/boards/{board}")).json()
    assert config["windows"] == ["hourly"] and config["retention_days"]["hourly"] == 2
    for bad in ({"hourly": -1}, {"hourly": "2"}, {"yearly": 1}):
        response = await client.put(
            f"/v1/boards/{board}", json={"retention_days": bad}, headers=ADMIN_H
        )
        assert response.status_code == 400, response.text
