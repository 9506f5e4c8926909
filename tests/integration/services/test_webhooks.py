"""hooks.period_closed (CONTRACT v1.3): each frozen period is announced once, signed, with
the same body on every attempt, retried with backoff until a 2xx by exactly one instance at
a time, and logged for the operator; bad URLs are refused at PUT. Two senders stand for two
instances (they share only PostgreSQL); a clock of the test's decides what is due."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from psycopg import AsyncConnection

from rankd import metrics
from rankd.runtime import Runtime
from rankd.services.webhooks import GIVE_UP_MS, Webhooks
from tests.integration.services.test_admin import ban, freeze
from tests.support.common import ADMIN_H, SERVER_H, WEBHOOK_SECRET, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wait_until
from tests.support.receiver import receiver
from tests.support.wire import assert_error


class Clock:
    def __init__(self) -> None:
        self.ms = int(datetime.now(UTC).timestamp() * 1000)

    def __call__(self) -> int:
        return self.ms


def attempts(outcome: str) -> float:
    value: float = metrics.WEBHOOK_ATTEMPTS.labels(outcome)._value.get()
    return value


async def closed_day(
    client: httpx.AsyncClient,
    runtime: Runtime,
    board: str,
    players: list[str],
    segments: dict[str, str] | None = None,
) -> str:
    """Yesterday's runs on ``board``, the day closed and frozen; its period id."""
    yesterday = datetime.now(UTC) - timedelta(days=1)
    for n, player in enumerate(players):
        run = {
            "run_id": f"y{n}",
            "player_id": player,
            "score": 100 - n,
            "ended_at": yesterday.isoformat(),
            "segments": segments,
        }
        response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert response.status_code == 200, response.text
    await wait_consumer_idle(client, runtime)  # before the grace shrinks: see test_scheduled
    await client.put(f"/v1/boards/{board}", json={"grace_seconds": 0}, headers=ADMIN_H)
    await freeze(runtime, board)
    return yesterday.strftime("%Y-%m-%d")


async def deliveries(client: httpx.AsyncClient, board: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/boards/{board}/deliveries", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["deliveries"]
    return found


async def test_a_frozen_period_is_announced_once_signed_and_retried_until_a_2xx(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    with receiver(503, 500) as hook:
        board = await make_board(
            windows=["daily", "all-time"],
            grace_seconds=86_400,
            segments=["country"],
            hooks={"period_closed": hook.url},
        )
        cheat = new_board_id("cheat")
        players = ["ann", cheat, "bob", "cat"]
        await ban(client, cheat)
        try:
            await asyncio.sleep(0.3)
            day = await closed_day(client, runtime, board, players, {"country": "FR"})
        finally:
            await ban(client, cheat, False)
        [pending] = await deliveries(client, board)  # the daily period only: not the
        # all-time window (never closed) nor the segment's standings
        assert pending["delivery_id"] == f"{board}:daily:{day}"
        assert (pending["status"], pending["attempts"], pending["url"]) == ("pending", 0, hook.url)

        clock = Clock()
        one, two = (Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0, clock) for _ in range(2))
        failed, delivered = attempts("failed"), attempts("delivered")
        try:
            # two instances at once: one attempt (503), then nothing until the backoff
            assert sorted(await asyncio.gather(one.run_once(), two.run_once())) == [0, 1]
            assert len(hook.received) == 1
            [log] = await deliveries(client, board)
            assert (log["status"], log["attempts"], log["last_status"]) == ("pending", 1, 503)
            assert log["last_error"] == "answered 503"
            assert await one.run_once() == 0
            clock.ms += 5_000
            assert sum(await asyncio.gather(one.run_once(), two.run_once())) == 1  # 500
            clock.ms += 9_000
            assert await two.run_once() == 0  # 10 s after the second attempt, not before
            clock.ms += 1_000
            assert sum(await asyncio.gather(one.run_once(), two.run_once())) == 1  # 200
            clock.ms += 86_400_000
            assert sum(await asyncio.gather(one.run_once(), two.run_once())) == 0
        finally:
            await one.close()
            await two.close()
        assert (attempts("failed") - failed, attempts("delivered") - delivered) == (2, 1)

        [done] = await deliveries(client, board)
        assert (done["status"], done["attempts"], done["last_status"]) == ("delivered", 3, 200)
        assert done["next_attempt_at"] is None and done["done_at"] is not None
        cur = await pg.execute(
            "SELECT body FROM deliveries WHERE delivery_id = %s", (done["delivery_id"],)
        )
        assert await cur.fetchone() == (None,)  # nothing kept once delivered

        # every attempt: the same bytes, signed, named
        bodies = {r.body for r in hook.received}
        assert len(hook.received) == 3 and len(bodies) == 1
        for request in hook.received:
            expected = hmac.new(WEBHOOK_SECRET.encode(), request.body, hashlib.sha256)
            assert request.headers["Rankd-Signature"] == f"sha256={expected.hexdigest()}"
            assert request.headers["Rankd-Event"] == "period_closed"
            assert request.headers["Rankd-Delivery"] == f"{board}:daily:{day}"
            assert request.headers["Content-Type"] == "application/json"
            assert request.path == "/hooks/rankd"
        body = orjson.loads(hook.received[0].body)
        at = datetime.fromisoformat(body["entries"][0]["achieved_at"])
        assert (
            body
            == {
                "board_id": board,
                "window": "daily",
                "period": day,
                "total": 3,  # the banned player's entry was not public when it froze
                "entries": [
                    {
                        "rank": rank,
                        "player_id": player,
                        "score": score,
                        "achieved_at": at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                        "name": None,
                    }
                    for rank, (player, score) in enumerate(
                        [("ann", 100), ("bob", 98), ("cat", 97)], start=1
                    )
                ],
            }
        )
        assert [e["player_id"] for e in body["entries"]] == ["ann", "bob", "cat"]

        # freezing again, or another pass, announces nothing more
        await freeze(runtime, board)
        assert len(await deliveries(client, board)) == 1


async def test_an_unreachable_receiver_is_retried_then_given_up_after_three_days(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    with receiver() as hook:
        url = hook.url  # closed below: nothing listens there any more
    board = await make_board(windows=["daily"], grace_seconds=86_400)
    await client.put(f"/v1/boards/{board}", json={"hooks": {"period_closed": url}}, headers=ADMIN_H)
    await closed_day(client, runtime, board, ["ann"])
    clock = Clock()
    sender = Webhooks(runtime.pg, WEBHOOK_SECRET, 2.0, clock)
    gave_up = attempts("gave_up")
    try:
        assert await sender.run_once() == 1
        [log] = await deliveries(client, board)
        assert log["status"] == "pending" and log["last_status"] is None
        assert "ConnectError" in log["last_error"]
        clock.ms += GIVE_UP_MS
        assert await sender.run_once() == 1
    finally:
        await sender.close()
    [log] = await deliveries(client, board)
    assert (log["status"], log["attempts"]) == ("failed", 2)
    assert attempts("gave_up") - gave_up == 1


async def test_the_service_sends_them_by_itself_and_a_slow_receiver_is_not_sent_twice(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    with receiver(delay_s=1.0) as hook:
        board = await make_board(
            windows=["daily"], grace_seconds=86_400, hooks={"period_closed": hook.url}
        )
        await closed_day(client, runtime, board, ["ann", "bob"])
        stop = asyncio.Event()
        senders = [Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0) for _ in range(2)]
        loops = [asyncio.create_task(s.run_forever(0.05, stop)) for s in senders]
        try:

            async def delivered() -> bool:
                return [d["status"] for d in await deliveries(client, board)] == ["delivered"]

            assert await wait_until(delivered)
        finally:
            stop.set()
            await asyncio.gather(*loops)
            for sender in senders:
                await sender.close()
        assert len(hook.received) == 1  # the second sender waited out the first's lease


@pytest.mark.parametrize(
    "url",
    [
        "ftp://game.example/x",
        "game.example/hook",
        "https://",
        "https://user:secret@game.example/x",
        "https://game.example/a b",
        "https://game.example:99999/x",
        "https://game.example/\u00e9",
        "https://game.example/x\n",
        "https://game.example/" + "x" * 2048,
        7,
    ],
)
async def test_a_bad_hook_is_400_and_changes_nothing(
    client: httpx.AsyncClient, make_board: MakeBoard, url: object
) -> None:
    board = await make_board(windows=["daily"])
    response = await client.put(
        f"/v1/boards/{board}", json={"hooks": {"period_closed": url}}, headers=ADMIN_H
    )
    assert_error(response, 400, "invalid_request")
    shown = await client.get(f"/v1/boards/{board}", headers=ADMIN_H)
    assert shown.json()["hooks"] == {}


async def test_hooks_are_an_admins_and_can_be_removed(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    url = "https://game.example/rankd?token=abc"
    board = await make_board(windows=["weekly"], hooks={"period_closed": url})
    assert (await client.get(f"/v1/boards/{board}", headers=ADMIN_H)).json()["hooks"] == {
        "period_closed": url
    }
    for headers in ({}, SERVER_H):
        assert "hooks" not in (await client.get(f"/v1/boards/{board}", headers=headers)).json()
        listed = await client.get("/v1/boards", headers=headers)
        assert all("hooks" not in b for b in listed.json()["boards"])
    assert_error(await client.get(f"/v1/boards/{board}/deliveries"), 401, "unauthorized")
    assert_error(
        await client.get(f"/v1/boards/{board}/deliveries", headers=SERVER_H), 403, "forbidden"
    )
    for bad in ({"period_ended": url}, ["x"], {"period_closed": {"url": url}}):
        response = await client.put(f"/v1/boards/{board}", json={"hooks": bad}, headers=ADMIN_H)
        assert_error(response, 400, "invalid_request")
    response = await client.put(
        f"/v1/boards/{board}", json={"hooks": {"period_closed": None}}, headers=ADMIN_H
    )
    assert response.json()["hooks"] == {}


async def test_an_erasure_removes_the_player_from_bodies_still_waiting(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, pg: AsyncConnection[Any]
) -> None:
    gone = new_board_id("gone")
    with receiver(503) as hook:
        board = await make_board(
            windows=["daily"], grace_seconds=86_400, hooks={"period_closed": hook.url}
        )
        await closed_day(client, runtime, board, ["ann", gone])
        sender = Webhooks(runtime.pg, WEBHOOK_SECRET, 5.0, Clock())
        try:
            assert await sender.run_once() == 1  # 503: still pending
        finally:
            await sender.close()
        assert gone.encode() in hook.received[0].body
    erased = await client.delete(f"/v1/players/{gone}", headers=ADMIN_H)
    assert erased.status_code == 200, erased.text
    cur = await pg.execute("SELECT body FROM deliveries WHERE board_id = %s", (board,))
    [(body,)] = await cur.fetchall()
    assert [e["player_id"] for e in orjson.loads(bytes(body))["entries"]] == ["ann"]
