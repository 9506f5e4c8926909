"""rankd.client against the real service: the session app (real Redis, PostgreSQL, NATS),
in process over httpx's ASGI transport, and over a real socket (uvicorn on a free port)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from rankd.client import (
    AsyncRankdClient,
    BoardImmutableField,
    BoardNotFound,
    Forbidden,
    HoldNotFound,
    InvalidRequest,
    PlayerNotRanked,
    RankdAPIError,
    RankdClient,
    RateLimited,
    RetryPolicy,
    ScoreOutOfRange,
    Unauthorized,
    Unavailable,
)
from rankd.client.calls import EventReader, chunks, time_text, top_event
from rankd.client.errors import error_for
from rankd.client.types import Run
from rankd.embedded import free_port
from tests.support.common import ADMIN, SERVER, new_board_id
from tests.support.durable import wait_until

BASE = "http://rankd.test"
FAST = RetryPolicy(attempts=4, first_delay_s=0.001, max_delay_s=0.01)


def in_process(app: Any, key: str | None = SERVER, **options: Any) -> AsyncRankdClient:
    return AsyncRankdClient(BASE, key, transport=httpx.ASGITransport(app=app), **options)


@pytest.fixture
async def server(app: FastAPI) -> AsyncIterator[AsyncRankdClient]:
    async with in_process(app) as client:
        yield client


@pytest.fixture
async def admin(app: FastAPI) -> AsyncIterator[AsyncRankdClient]:
    async with in_process(app, ADMIN) as client:
        yield client


class Front:
    """In front of the real app: answers the first ``failures`` requests whose path ends
    with ``suffix`` itself (``status``, the contract's error body), then passes them on;
    counts what it saw."""

    def __init__(
        self, app: FastAPI, suffix: str, failures: int, status: int = 503, code: str = "unavailable"
    ) -> None:
        self.app, self.suffix, self.failures = app, suffix, failures
        self.status, self.code = status, code
        self.seen = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith(self.suffix):
            self.seen += 1
            if self.seen <= self.failures:
                body = orjson.dumps({"error": {"code": self.code, "message": "try again"}})
                headers = [(b"content-type", b"application/json")]
                if self.status == 429:
                    headers.append((b"retry-after", b"30"))
                await send(
                    {"type": "http.response.start", "status": self.status, "headers": headers}
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def new_board(admin: AsyncRankdClient, **config: Any) -> str:
    board_id = new_board_id("cl")
    board = await admin.put_board(board_id, **config)
    assert board["board_id"] == board_id
    return board_id


# --- every endpoint the service answers today ---------------------------------------------


async def test_boards_runs_reads_and_profiles(
    admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin, windows=["all-time", "weekly"], segments=["country"])
    updated = await admin.put_board(board_id, grace_seconds=60)
    assert updated["grace_seconds"] == 60 and updated["windows"] == ["all-time", "weekly"]
    assert (await server.get_board(board_id))["segments"] == ["country"]
    assert board_id in {b["board_id"] for b in await server.list_boards()}

    ended = datetime.now(UTC) - timedelta(seconds=5)
    result = await server.submit(
        board_id, "r-1", "p1", 300, ended_at=ended, segments={"country": "FR"}
    )
    assert result["run_id"] == "r-1" and result["score"] == 300
    windows = {(s["window"], s["segment"]) for s in result["standings"]}
    assert windows == {
        ("all-time", None),
        ("weekly", None),
        ("all-time", "country:FR"),
        ("weekly", "country:FR"),
    }
    assert all(s["rank"] == 1 for s in result["standings"])
    batch = await server.submit_batch(
        board_id,
        [
            {"run_id": "r-2", "player_id": "p2", "score": 200},
            {"run_id": "r-3", "player_id": "p3", "score": -1},
            {"run_id": "r-4", "player_id": "p4", "score": 100},
        ],
    )
    assert [item["run_id"] for item in batch] == ["r-2", "r-3", "r-4"]
    assert "standings" in batch[0] and batch[1]["error"]["code"] == "invalid_request"

    await server.put_player("p1", name="kai_runs", segments={"country": "FR"})
    assert await server.get_player("p1") == {
        "player_id": "p1",
        "name": "kai_runs",
        "segments": {"country": "FR"},
    }
    top = await server.top(board_id, n=2)
    assert top["total"] == 3
    assert [(e["player_id"], e["rank"], e["name"]) for e in top["entries"]] == [
        ("p1", 1, "kai_runs"),
        ("p2", 2, None),
    ]
    page = await server.top(board_id, n=2, offset=2, window="weekly")
    assert [e["player_id"] for e in page["entries"]] == ["p4"]
    segment = await server.top(board_id, segment="country:FR")
    assert [e["player_id"] for e in segment["entries"]] == ["p1"]
    me = await server.player(board_id, "p2")
    assert (me["rank"], me["total"]) == (2, 3)
    around = await server.around(board_id, "p2", range=1)
    assert [e["player_id"] for e in around["entries"]] == ["p1", "p2", "p4"]
    friends = await server.friends(board_id, "p4", ["p1", "nobody"])
    assert [(e["player_id"], e["position"]) for e in friends["entries"]] == [("p1", 1), ("p4", 2)]
    assert (await server.rank_of(board_id, 250))["rank"] == 2
    periods = await server.periods(board_id, window="weekly")
    assert [p["status"] for p in periods["periods"]] == ["open"]
    assert await server.healthz() == {"status": "ok"}
    assert (await server.readyz())["status"] in ("ready", "degraded")


async def test_errors_are_exceptions_with_status_code_and_message(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin, max_run_score=1000)
    with pytest.raises(BoardNotFound) as missing:
        await server.top(new_board_id("missing"))
    assert (missing.value.status, missing.value.code) == (404, "board_not_found")
    assert "does not exist" in missing.value.message
    assert isinstance(missing.value, RankdAPIError)
    with pytest.raises(Forbidden):
        await server.put_board(board_id, grace_seconds=1)
    async with in_process(app, key=None) as public:
        with pytest.raises(Unauthorized) as unauthorized:
            await public.submit(board_id, "r-1", "p1", 1)
        assert unauthorized.value.status == 401
    with pytest.raises(ScoreOutOfRange):
        await server.submit(board_id, "r-1", "p1", 5000)
    with pytest.raises(PlayerNotRanked):
        await server.player(board_id, "p1")
    with pytest.raises(InvalidRequest) as invalid:
        await server.top(board_id, n=0)
    assert invalid.value.status == 400 and "n" in invalid.value.message
    with pytest.raises(HoldNotFound) as hold:
        await admin.approve(board_id, "r-none")
    assert hold.value.status == 404
    await server.submit(board_id, "r-1", "p1", 10)
    with pytest.raises(BoardImmutableField) as immutable:
        await admin.put_board(board_id, order="asc")
    assert immutable.value.status == 409


async def test_moderation_round_trip(admin: AsyncRankdClient, server: AsyncRankdClient) -> None:
    board_id = await new_board(admin, hold_top=1)
    held = await server.submit(board_id, "r-h", "first", 50)
    assert held["standings"][0]["status"] == "held"
    [hold] = await admin.holds(board_id)
    assert (hold["run_id"], hold["player_id"], hold["score"]) == ("r-h", "first", 50)
    own = await server.player(board_id, "first", viewer="first")
    assert (own["rank"], own["score"]) == (1, 50)
    assert await admin.approve(board_id, "r-h") == {
        "board_id": board_id,
        "run_id": "r-h",
        "decision": "approved",
    }
    assert (await server.top(board_id))["total"] == 1
    player = new_board_id("client-ban")  # bans are global: a player of this test only
    await server.submit(board_id, "r-b", player, 10)
    assert await admin.ban(player) == {"player_id": player, "banned": True}
    assert [e["player_id"] for e in (await server.top(board_id))["entries"]] == ["first"]
    assert await admin.unban(player) == {"player_id": player, "banned": False}
    assert (await server.top(board_id))["total"] == 2


async def test_admin_routes_of_v1_2(admin: AsyncRankdClient, server: AsyncRankdClient) -> None:
    board_id = await new_board(admin, segments=["country"])
    await server.submit(board_id, "r-1", "p1", 10, segments={"country": "FR"})
    gone = new_board_id("client-erase")
    await server.put_player(gone, name="to_be_erased")
    await server.submit(board_id, "r-2", gone, 20, segments={"country": "DE"})
    assert (await admin.ban(gone))["banned"] is True
    page = await admin.bans(limit=1)
    assert [b["player_id"] for b in page["bans"]] == [gone] and page["next"] is not None
    assert (await admin.get_player(gone))["banned"] is True
    assert "banned" not in await server.get_player(gone)

    async def listed() -> bool:
        found = await server.segments(board_id)
        return found["segments"] == [
            {"dimension": "country", "values": [{"value": "FR", "total": 1}]}
        ]

    assert await wait_until(listed)  # the banned player's DE does not show
    assert await admin.erase_player(gone) == {"player_id": gone, "erased": True}
    assert await server.get_player(gone) == {"player_id": gone, "name": None, "segments": {}}
    assert gone not in [b["player_id"] for b in (await admin.bans(limit=1000))["bans"]]
    assert await admin.delete_board(board_id) == {"board_id": board_id, "deleted": True}
    with pytest.raises(BoardNotFound):
        await server.top(board_id)
    with pytest.raises(Forbidden):
        await server.erase_player("p1")


async def test_submit_many_sends_batches_of_at_most_1000(
    app: FastAPI, admin: AsyncRankdClient
) -> None:
    board_id = await new_board(admin)
    front = Front(app, "/runs:batch", failures=0)
    runs: list[Run] = [{"run_id": f"r-{i}", "player_id": f"p{i}", "score": i} for i in range(2345)]
    async with in_process(front) as client:
        results = await client.submit_many(board_id, iter(runs))
        assert front.seen == 3
        assert [r["run_id"] for r in results] == [r["run_id"] for r in runs]
        assert all("standings" in r for r in results)
        assert (await client.top(board_id, n=1))["total"] == 2345
        await client.submit_many(board_id, runs[:10], batch_size=4)
        assert front.seen == 6
    with pytest.raises(ValueError):
        await admin.submit_batch(board_id, runs[:1001])


async def test_submits_retry_503_with_bounded_backoff(
    app: FastAPI, admin: AsyncRankdClient
) -> None:
    board_id = await new_board(admin, policy="sum")
    front = Front(app, "/runs", failures=2)
    async with in_process(front, retry=FAST) as client:
        result = await client.submit(board_id, "r-1", "p1", 5)
        assert front.seen == 3  # two 503s, then the real service
        assert result["standings"][0]["score"] == 5
        # resent after a 503 that the service had in fact accepted: still counted once
        await client.submit(board_id, "r-1", "p1", 5)
        assert (await client.player(board_id, "p1"))["score"] == 5

    front = Front(app, "/runs", failures=100)
    async with in_process(front, retry=FAST) as client:
        with pytest.raises(Unavailable):
            await client.submit(board_id, "r-2", "p1", 5)
        assert front.seen == FAST.attempts

    front = Front(app, "/top", failures=1)
    async with in_process(front, retry=FAST) as client:
        with pytest.raises(Unavailable):
            await client.top(board_id)  # reads are the caller's to retry
        assert front.seen == 1

    front = Front(app, "/runs", failures=1, status=429, code="rate_limited")
    async with in_process(front, retry=FAST) as client:
        with pytest.raises(RateLimited) as limited:
            await client.submit(board_id, "r-3", "p1", 5)
        assert limited.value.retry_after == 30.0  # longer than max_delay_s: not waited for
        assert front.seen == 1


# --- over a real socket -------------------------------------------------------------------


async def test_both_clients_over_a_real_socket(app: FastAPI, admin: AsyncRankdClient) -> None:
    board_id = await new_board(admin)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "uvicorn did not start"
            await asyncio.sleep(0.01)
        base = f"http://127.0.0.1:{port}"

        def blocking() -> tuple[int, list[str]]:
            with RankdClient(base, SERVER) as client:
                client.submit(board_id, "r-1", "p1", 10)
                client.submit_many(board_id, [{"run_id": "r-2", "player_id": "p2", "score": 20}])
                with pytest.raises(BoardNotFound):
                    client.get_board(new_board_id("missing"))
                top = client.top(board_id)
                return top["total"], [e["player_id"] for e in top["entries"]]

        def blocking_admin() -> None:
            with RankdClient(base, ADMIN) as client:
                assert client.segments(board_id)["segments"] == []
                assert client.bans(limit=1)["bans"] is not None
                erased = new_board_id("socket-erased")  # erasures are global: nobody else's
                assert client.erase_player(erased) == {"player_id": erased, "erased": True}
                assert client.delete_board(board_id) == {"board_id": board_id, "deleted": True}

        assert await asyncio.to_thread(blocking) == (2, ["p2", "p1"])
        async with AsyncRankdClient(base) as public:
            assert (await public.rank_of(board_id, 15))["rank"] == 2
        await asyncio.to_thread(blocking_admin)
    finally:
        server.should_exit = True
        await serving


# --- the pieces without a server ----------------------------------------------------------


def test_backoff_grows_and_stays_bounded() -> None:
    policy = RetryPolicy(attempts=10, first_delay_s=0.1, max_delay_s=1.0)
    for retry in range(10):
        ceiling = min(1.0, 0.1 * 2**retry)
        for _ in range(20):
            assert ceiling / 2 <= policy.delay(retry) <= ceiling
    assert policy.delay(0, retry_after=0.5) == 0.5
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


def test_chunks_and_times() -> None:
    runs: list[Run] = [{"run_id": str(i), "player_id": "p", "score": i} for i in range(5)]
    assert [len(c) for c in chunks(runs, 2)] == [2, 2, 1]
    with pytest.raises(ValueError):
        list(chunks(runs, 1001))
    paris = timezone(timedelta(hours=1))
    assert time_text(datetime(2026, 11, 3, 19, 22, 7, 123456, paris)) == "2026-11-03T18:22:07.123Z"
    with pytest.raises(ValueError):
        time_text(datetime(2026, 11, 3))


def test_event_reader_yields_top_events_and_skips_heartbeats() -> None:
    reader = EventReader()
    lines = [": heartbeat", "", "event: top", 'data: {"total": 1,', 'data: "entries": []}', ""]
    found = [top_event(reader.feed(line)) for line in lines]
    assert [f for f in found if f is not None] == [{"total": 1, "entries": []}]


def test_unknown_codes_and_bodies_become_the_base_error() -> None:
    error = error_for(418, {"error": {"code": "teapot", "message": "short and stout"}})
    assert type(error) is RankdAPIError and error.code == "teapot" and error.status == 418
    gateway = error_for(503, None)
    assert isinstance(gateway, Unavailable)
