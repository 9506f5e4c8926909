"""Scheduled boards (CONTRACT v1.3): a schedule's occurrences are the periods of the
``scheduled`` window. A run counts in the occurrence it ended in, is ``not_open`` between
occurrences (and counts in the board's other windows as usual); reads, the periods list
(with the ``upcoming`` one), ``active`` boards, freezing with a webhook per occurrence, a
rebuild and a replay all agree. On 1 and 4 shards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from redis.asyncio import Redis

from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.services.webhooks import Webhooks
from rankd.stores.redis import keys
from tests.integration.services.test_admin import freeze
from tests.support.common import ADMIN_H, SERVER_H, WEBHOOK_SECRET, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wipe_board
from tests.support.receiver import receiver
from tests.support.wire import assert_error


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


def minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def basic(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%MZ")


def rfc(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


async def send(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int, ended: datetime
) -> dict[str, Any]:
    body = {"run_id": run_id, "player_id": player, "score": score, "ended_at": rfc(ended)}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    return {s["window"]: s for s in response.json()["standings"]}


async def top(client: httpx.AsyncClient, board: str, **params: str) -> list[tuple[str, int]]:
    page = await client.get(f"/v1/boards/{board}/top", params=params)
    assert page.status_code == 200, page.text
    return [(e["player_id"], e["score"]) for e in page.json()["entries"]]


async def test_runs_count_in_the_occurrence_they_ended_in(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, redis: Redis
) -> None:
    first = await runtime.runlog.last_sequence() + 1  # the replay below starts here
    now = datetime.now(UTC)
    # hourly cups of 30 minutes; the current one began 10 minutes ago
    current = minute(now) - timedelta(minutes=10)
    previous, upcoming = current - timedelta(hours=1), current + timedelta(hours=1)
    schedule = {
        "starts_at": rfc(current - timedelta(hours=5)),
        "every": "PT1H",
        "duration": "PT30M",
    }
    board = await make_board(windows=["all-time"], schedule=schedule)

    config = (await client.get(f"/v1/boards/{board}")).json()
    assert config["windows"] == ["all-time", "scheduled"]  # a schedule adds its window
    assert config["schedule"] == {
        "starts_at": rfc(current - timedelta(hours=5)).replace("Z", ".000Z"),
        "every": "PT1H",
        "duration": "PT30M",
        "ends_at": None,
    }
    assert config["current_period"] == {
        "period": basic(current),
        "starts_at": rfc(current).replace("Z", ".000Z"),
        "ends_at": rfc(current + timedelta(minutes=30)).replace("Z", ".000Z"),
    }
    assert config["next_period"]["period"] == basic(upcoming)

    now_runs = await send(client, board, "a1", "ann", 50, now - timedelta(seconds=1))
    assert now_runs["scheduled"]["status"] == "ranked"
    assert now_runs["scheduled"]["period"] == basic(current)
    gap = await send(client, board, "b1", "bob", 90, previous + timedelta(minutes=45))
    assert (gap["scheduled"]["status"], gap["all-time"]["status"]) == ("not_open", "ranked")
    before = await send(client, board, "c1", "cat", 70, previous + timedelta(minutes=5))
    assert before["scheduled"] == {**before["scheduled"], "status": "ranked", "rank": 1}
    assert before["scheduled"]["period"] == basic(previous)

    assert await top(client, board, window="scheduled") == [("ann", 50)]
    assert await top(client, board, window="scheduled", period=basic(previous)) == [("cat", 70)]
    assert await top(client, board) == [("bob", 90), ("cat", 70), ("ann", 50)]
    for bad in (basic(current + timedelta(minutes=1)), "2026-12-05", "20261305T1800Z"):
        assert_error(
            await client.get(
                f"/v1/boards/{board}/top", params={"window": "scheduled", "period": bad}
            ),
            400,
            "invalid_request",
        )
    listed = await client.get(f"/v1/boards/{board}/periods", params={"window": "scheduled"})
    assert [(p["period"], p["status"]) for p in listed.json()["periods"]] == [
        (basic(upcoming), "upcoming"),
        (basic(current), "open"),
        (basic(previous), "open"),  # ended, but within the board's grace
    ]

    active = await client.get("/v1/boards", params={"active": "true"})
    assert board in [b["board_id"] for b in active.json()["boards"]]

    expected = {
        "current": await top(client, board, window="scheduled"),
        "previous": await top(client, board, window="scheduled", period=basic(previous)),
    }
    await wait_consumer_idle(client, runtime)
    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    assert await top(client, board, window="scheduled") == expected["current"]
    assert (
        await top(client, board, window="scheduled", period=basic(previous)) == expected["previous"]
    )
    await wipe_board(redis, board)
    await replay(runtime.runlog, runtime.applier, first)
    assert await top(client, board, window="scheduled") == expected["current"]
    assert (
        await top(client, board, window="scheduled", period=basic(previous)) == expected["previous"]
    )


async def test_each_occurrence_is_frozen_and_announced(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    now = datetime.now(UTC)
    start = minute(now) - timedelta(hours=3)  # three finished two-hour occurrences... one
    schedule = {"starts_at": rfc(start), "every": "PT1H", "duration": "PT1H"}
    with receiver() as hook:
        board = await make_board(
            windows=["all-time"],
            schedule=schedule,
            grace_seconds=86_400,
            hooks={"period_closed": hook.url},
        )
        for n in range(3):
            ended = start + timedelta(hours=n, minutes=5)
            await send(client, board, f"r{n}", f"p{n}", 10 + n, ended)
        # applied before the grace shrinks (the consumer decides by the config it meets)
        await wait_consumer_idle(client, runtime)
        await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
        await freeze(runtime, board)
        sender = Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0)
        try:
            assert await sender.run_once() == 3
        finally:
            await sender.close()
        announced = sorted(r.headers["Rankd-Delivery"] for r in hook.received)
        assert announced == [
            f"{board}:scheduled:{basic(start + timedelta(hours=n))}" for n in range(3)
        ]
        bodies = {orjson.loads(r.body)["period"]: orjson.loads(r.body) for r in hook.received}
        first = bodies[basic(start)]
        assert (first["window"], first["total"], first["entries"][0]["player_id"]) == (
            "scheduled",
            1,
            "p0",
        )
    listed = await client.get(f"/v1/boards/{board}/periods", params={"window": "scheduled"})
    statuses = {p["period"]: p["status"] for p in listed.json()["periods"]}
    assert {statuses[basic(start + timedelta(hours=n))] for n in range(3)} <= {"closed", "archived"}


async def test_schedules_are_checked_and_change_only_ahead(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    now = minute(datetime.now(UTC))
    bad: list[object] = [
        "daily",
        {"every": "P1D"},
        {"starts_at": rfc(now), "every": "P1D", "duration": "P2D"},
        {"starts_at": rfc(now), "every": "PT30M"},
        {"starts_at": rfc(now), "every": "P2Y"},
        {"starts_at": rfc(now)},
        {"starts_at": rfc(now + timedelta(seconds=30)), "every": "P1D"},
        {"starts_at": rfc(now), "every": "P1D", "ends_at": rfc(now - timedelta(days=1))},
        {"starts_at": rfc(now), "every": "1 day"},
        {"starts_at": rfc(now), "every": "P1D", "cap": 5},
    ]
    for schedule in bad:
        response = await client.put(
            f"/v1/boards/{new_board_id()}", json={"schedule": schedule}, headers=ADMIN_H
        )
        assert_error(response, 400, "invalid_request")
    no_schedule = await client.put(
        f"/v1/boards/{new_board_id()}", json={"windows": ["scheduled"]}, headers=ADMIN_H
    )
    assert_error(no_schedule, 400, "invalid_request")

    schedule = {"starts_at": rfc(now - timedelta(days=2)), "every": "P1D", "duration": "PT2H"}
    board = await make_board(windows=["all-time"], schedule=schedule)
    path = f"/v1/boards/{board}"
    # no runs yet: anything goes
    assert (await client.put(path, json={"schedule": schedule}, headers=ADMIN_H)).is_success
    await send(client, board, "r1", "ann", 5, now - timedelta(minutes=1))
    moved = {**schedule, "every": "PT12H"}
    assert_error(
        await client.put(path, json={"schedule": moved}, headers=ADMIN_H),
        409,
        "board_immutable_field",
    )
    assert_error(
        await client.put(path, json={"schedule": None, "windows": ["all-time"]}, headers=ADMIN_H),
        409,
        "board_immutable_field",
    )
    ending = {**schedule, "ends_at": rfc(now + timedelta(days=3))}
    response = await client.put(path, json={"schedule": ending}, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    assert response.json()["schedule"]["ends_at"] is not None
    for field, value in (("join_required", 1), ("max_entrants", -1), ("max_attempts", 10**6)):
        refused = await client.put(path, json={field: value}, headers=ADMIN_H)
        assert_error(refused, 400, "invalid_request")


async def test_a_schedule_in_the_future_is_not_active_and_runs_before_it_are_not_open(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    start = minute(datetime.now(UTC)) + timedelta(days=1)
    board = await make_board(
        windows=["daily"], schedule={"starts_at": rfc(start), "duration": "P2D"}
    )
    active = await client.get("/v1/boards", params={"active": "true"})
    assert board not in [b["board_id"] for b in active.json()["boards"]]
    config = (await client.get(f"/v1/boards/{board}")).json()
    assert config["current_period"] is None
    assert config["next_period"]["period"] == basic(start)
    early = await send(client, board, "e1", "ann", 5, datetime.now(UTC))
    assert early["scheduled"]["status"] == "not_open" and early["daily"]["status"] == "ranked"
    assert await top(client, board, window="scheduled") == []  # the next occurrence, empty
    listed = await client.get(f"/v1/boards/{board}/periods", params={"window": "scheduled"})
    assert [(p["period"], p["status"]) for p in listed.json()["periods"]] == [
        (basic(start), "upcoming")
    ]


def open_schedule(**rules: object) -> dict[str, Any]:
    """A board config whose daily occurrence began a minute ago and lasts two hours."""
    start = minute(datetime.now(UTC)) - timedelta(minutes=1)
    schedule = {"starts_at": rfc(start), "every": "P1D", "duration": "PT2H"}
    return {"windows": ["all-time"], "schedule": schedule, **rules}


async def join(client: httpx.AsyncClient, board: str, player: str, **params: str) -> httpx.Response:
    return await client.post(
        f"/v1/boards/{board}/players/{player}/join", params=params, headers=SERVER_H
    )


async def test_a_capped_occurrence_takes_exactly_its_entrants_under_a_race(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    board = await make_board(**open_schedule(join_required=True, max_entrants=100))
    players = [f"racer-{i:04d}" for i in range(1000)]
    answers = []
    for i in range(0, len(players), 250):  # 250 joins in flight at a time
        answers += await asyncio.gather(*(join(client, board, p) for p in players[i : i + 250]))
    codes = sorted(a.status_code for a in answers)
    assert codes.count(200) == 100 and codes.count(409) == 900, codes[:3]
    assert {a.json()["error"]["code"] for a in answers if a.status_code == 409} == {"board_full"}
    joined = [p for p, a in zip(players, answers, strict=True) if a.status_code == 200]
    again = await join(client, board, joined[0])
    assert again.status_code == 200 and again.json()["joined"] is True  # harmless
    async with runtime.pg.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM tournament_entrants WHERE board_id = %s", (board,)
        )
        assert await cur.fetchone() == (100,)
    # only the entrants' runs count there
    outsider = next(p for p in players if p not in joined)
    inside = await send(client, board, "in-1", joined[1], 40, datetime.now(UTC))
    outside = await send(client, board, "out-1", outsider, 90, datetime.now(UTC))
    assert inside["scheduled"]["status"] == "ranked"
    assert (outside["scheduled"]["status"], outside["all-time"]["status"]) == (
        "not_joined",
        "ranked",
    )
    assert await top(client, board, window="scheduled") == [(joined[1], 40)]


async def test_attempts_and_entrants_are_capped_and_survive_a_rebuild(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, redis: Redis
) -> None:
    first = await runtime.runlog.last_sequence() + 1
    board = await make_board(**open_schedule(max_entrants=2, max_attempts=3))
    now = datetime.now(UTC) - timedelta(seconds=5)
    statuses = [
        (await send(client, board, f"a{n}", "ann", 10 + n, now))["scheduled"]["status"]
        for n in range(5)
    ]
    assert statuses == ["ranked"] * 3 + ["attempts_exhausted"] * 2
    resend = await send(client, board, "a1", "ann", 11, now)  # a counted run, sent again
    assert resend["scheduled"]["status"] == "ranked"
    assert (await send(client, board, "b0", "bob", 5, now))["scheduled"]["status"] == "ranked"
    late = await send(client, board, "c0", "cat", 99, now)  # a third player: the cap is 2
    assert (late["scheduled"]["status"], late["all-time"]["status"]) == ("full", "ranked")
    assert_error(await join(client, board, "cat"), 409, "board_full")
    assert (await join(client, board, "bob")).status_code == 200  # already in
    expected = [("ann", 12), ("bob", 5)]
    assert await top(client, board, window="scheduled") == expected

    await wait_consumer_idle(client, runtime)
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            await redis.unlink(key)
    await runtime.rebuilder.rebuild(board=board)
    assert await top(client, board, window="scheduled") == expected
    after = await send(client, board, "a9", "ann", 50, now)  # still three attempts used
    assert after["scheduled"]["status"] == "attempts_exhausted"
    assert (await send(client, board, "d0", "dan", 7, now))["scheduled"]["status"] == "full"
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            await redis.unlink(key)
    await replay(runtime.runlog, runtime.applier, first)
    assert await top(client, board, window="scheduled") == expected


async def test_joining_needs_an_open_or_upcoming_occurrence_and_the_right_credentials(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    start = minute(datetime.now(UTC)) + timedelta(hours=1)
    schedule = {"starts_at": rfc(start), "every": "P1D", "duration": "PT1H"}
    board = await make_board(windows=["all-time"], schedule=schedule, join_required=True)
    assert_error(await join(client, board, "ann"), 409, "not_open")  # none open yet
    early = await join(client, board, "ann", period=basic(start))
    assert early.status_code == 200, early.text
    assert early.json() == {"player_id": "ann", "period": basic(start), "joined": True}
    assert_error(await join(client, board, "ann", period="20200101T0000Z"), 409, "not_open")
    assert_error(await client.post(f"/v1/boards/{board}/players/ann/join"), 401, "unauthorized")
    assert_error(
        await client.post(f"/v1/boards/{board}/players/bad%20id/join", headers=SERVER_H),
        400,
        "invalid_request",
    )
    plain = await make_board(windows=["daily"])
    assert_error(await join(client, plain, "ann"), 409, "not_open")
    refused = await client.put(f"/v1/boards/{plain}", json={"max_attempts": 3}, headers=ADMIN_H)
    assert_error(refused, 400, "invalid_request")  # rules need a schedule


async def test_joins_without_runs_survive_a_lost_redis(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, redis: Redis
) -> None:
    board = await make_board(**open_schedule(join_required=True, max_entrants=2))
    for player in ("ann", "bob"):
        assert (await join(client, board, player)).status_code == 200
    for pattern in keys.board_patterns(board):
        async for key in redis.scan_iter(match=pattern):
            await redis.unlink(key)
    await runtime.rebuilder.rebuild(board=board)
    assert_error(await join(client, board, "cat"), 409, "board_full")
    counted = await send(client, board, "a1", "ann", 5, datetime.now(UTC))
    assert counted["scheduled"]["status"] == "ranked"


async def test_an_occurrence_with_no_run_is_announced_with_a_total_of_zero(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    now = datetime.now(UTC)
    start = minute(now) - timedelta(hours=3)
    schedule = {"starts_at": rfc(start), "every": "PT1H", "duration": "PT1H"}
    with receiver() as hook:
        board = await make_board(
            windows=["all-time"], schedule=schedule, hooks={"period_closed": hook.url}
        )
        # the board was created now: only occurrences closing from now on are announced
        await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
        await freeze(runtime, board)
        sender = Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0)
        try:
            assert await sender.run_once() == 0
        finally:
            await sender.close()
    async with runtime.pg.connection() as conn:  # as if it had been created hours ago
        await conn.execute(
            "UPDATE boards SET created_at = now() - interval '1 day' WHERE board_id = %s",
            (board,),
        )
    with receiver() as hook:
        await client.put(
            f"/v1/boards/{board}", json={"hooks": {"period_closed": hook.url}}, headers=ADMIN_H
        )
        await runtime.boards.get(board)  # the registry's copy may be older
        await freeze(runtime, board)
        await freeze(runtime, board)  # a second pass records nothing more
        sender = Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0)
        try:
            assert await sender.run_once() == 3
        finally:
            await sender.close()
        bodies = sorted((orjson.loads(r.body) for r in hook.received), key=lambda b: b["period"])
        assert [b["period"] for b in bodies] == [
            basic(start + timedelta(hours=n)) for n in range(3)
        ]
        assert all(b["total"] == 0 and b["entries"] == [] for b in bodies)
