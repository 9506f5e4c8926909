"""rankd.client against the real service: the session app (real Redis, PostgreSQL, NATS),
in process over httpx's ASGI transport, and over a real socket (uvicorn on a free port)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import jwt
import orjson
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from rankd.api.app import create_app
from rankd.client import (
    AsyncRankdClient,
    BoardFull,
    BoardImmutableField,
    BoardNotFound,
    Forbidden,
    HoldNotFound,
    InvalidRequest,
    NotBuilt,
    NotEnabled,
    NotOpen,
    PlayerNotRanked,
    RankdAPIError,
    RankdClient,
    RateLimited,
    RetryPolicy,
    ScoreOutOfRange,
    Unauthorized,
    Unavailable,
)
from rankd.client.calls import (
    EventReader,
    chunks,
    player_event,
    run_body,
    time_text,
    top_event,
    where_params,
)
from rankd.client.calls import deliveries as deliveries_call
from rankd.client.calls import join as join_call
from rankd.client.calls import top as top_call
from rankd.client.errors import error_for
from rankd.client.events import PlayerEvent
from rankd.client.types import Run
from rankd.embedded import free_port
from rankd.runtime import Runtime
from tests.integration.services.test_scheduled import open_schedule
from tests.integration.services.test_webhooks import closed_day
from tests.support.common import ADMIN, SERVER, TOKEN_SECRET, Urls, make_settings, new_board_id
from tests.support.durable import wait_until
from tests.support.live import serving

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
    assert friends["not_found"] == ["nobody"]
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


# a receiver nobody runs: the session service sends no webhooks (make_settings), and the
# test deletes its board, and so its deliveries, before another test's sender could claim one
HOOK = "http://127.0.0.1:9/rankd/hooks"


async def test_hooks_are_an_admins_and_deliveries_are_listed_v1_3(
    app: FastAPI,
    client: httpx.AsyncClient,
    runtime: Runtime,
    admin: AsyncRankdClient,
    server: AsyncRankdClient,
) -> None:
    board_id = await new_board(admin, windows=["daily", "all-time"], grace_seconds=86_400)
    try:
        hooked = await admin.put_board(board_id, hooks={"period_closed": HOOK})
        assert hooked["hooks"] == {"period_closed": HOOK}
        assert hooked["windows"] == ["daily", "all-time"]  # the other settings kept
        assert (await admin.get_board(board_id))["hooks"] == {"period_closed": HOOK}
        [listed] = [b for b in await admin.list_boards() if b["board_id"] == board_id]
        assert listed["hooks"] == {"period_closed": HOOK}
        # a receiver's URL is the game's business: a server key's reads, or none, leave it out
        async with in_process(app, key=None) as public:
            for reader in (server, public):
                assert "hooks" not in await reader.get_board(board_id)
                [seen] = [b for b in await reader.list_boards() if b["board_id"] == board_id]
                assert "hooks" not in seen
        with pytest.raises(InvalidRequest) as bad:
            await admin.put_board(board_id, hooks={"period_closed": "ftp://game.example/x"})
        assert "hooks.period_closed" in bad.value.message
        with pytest.raises(Forbidden):
            await server.put_board(board_id, hooks={"period_closed": HOOK})

        assert await admin.deliveries(board_id) == []
        with pytest.raises(Forbidden):
            await server.deliveries(board_id)
        with pytest.raises(InvalidRequest):
            await admin.deliveries(board_id, limit=0)
        with pytest.raises(BoardNotFound):
            await admin.deliveries(new_board_id("missing"))

        # yesterday frozen: one delivery, pending (the session service sends none)
        players = [new_player("hook-a"), new_player("hook-b")]
        day = await closed_day(client, runtime, board_id, players)
        [pending] = await admin.deliveries(board_id)
        assert pending["delivery_id"] == f"{board_id}:daily:{day}"
        assert (pending["event"], pending["url"], pending["status"], pending["attempts"]) == (
            "period_closed",
            HOOK,
            "pending",
            0,
        )
        assert pending["next_attempt_at"] is not None and pending["done_at"] is None
        assert (pending["last_status"], pending["last_error"]) == (None, None)
        datetime.fromisoformat(pending["created_at"])
        assert await admin.deliveries(board_id, limit=1) == [pending]

        # null removes it: no hooks, and the delivery log stays
        unhooked = await admin.put_board(board_id, hooks={"period_closed": None})
        assert unhooked["hooks"] == {}
        assert (await admin.get_board(board_id))["hooks"] == {}
        assert await admin.deliveries(board_id, limit=1000) == [pending]
    finally:
        await admin.delete_board(board_id)


def test_deliveries_send_their_limit() -> None:
    call = deliveries_call("a b", 7)
    assert (call.method, call.path, call.params) == (
        "GET",
        "/v1/boards/a%20b/deliveries",
        {"limit": "7"},
    )
    assert not call.idempotent_submit


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


# --- player tokens, one player across boards (v1.3) ---------------------------------------


def new_player(prefix: str) -> str:
    return new_board_id(prefix).replace(".", "-")  # a valid player id, of this test only


async def test_a_token_client_reads_its_own_view_and_submits_its_own_runs(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    servers_only = await new_board(admin)
    open_board = await new_board(admin, client_submits=True, max_run_score=1000)
    assert (await server.get_board(servers_only))["client_submits"] is False
    assert (await server.get_board(open_board))["client_submits"] is True
    banned, other, friend = new_player("tok-ban"), new_player("tok-other"), new_player("tok-fr")
    await server.submit(servers_only, "r-1", banned, 50)
    await server.submit(servers_only, "r-2", other, 10)
    await admin.ban(banned)

    async def hidden() -> bool:
        return [e["player_id"] for e in (await server.top(servers_only))["entries"]] == [other]

    assert await wait_until(hidden)
    issued = await server.mint_token(banned, scope=["submit", "read"], ttl_s=600)
    assert issued["scope"] == ["read", "submit"]  # in the service's order
    claims = jwt.decode(issued["token"], TOKEN_SECRET, algorithms=["HS256"])
    assert (claims["sub"], claims["scope"]) == (banned, "read submit")
    expires = datetime.fromisoformat(issued["expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=590) < expires - datetime.now(UTC) <= timedelta(seconds=600)

    front = Front(app, "/runs", failures=0)
    async with in_process(front, issued["token"], retry=FAST) as game:
        # shadow-banned: the player still sees themselves, where they would stand
        top = await game.top(servers_only)
        assert [e["player_id"] for e in top["entries"]] == [banned, other]
        assert (await game.player(servers_only, banned))["rank"] == 1
        assert (await game.top(servers_only, viewer=banned))["total"] == 2
        around = await game.around(servers_only, banned, range=1)
        assert [e["player_id"] for e in around["entries"]] == [banned, other]
        friends = await game.friends(servers_only, banned, [other, friend])
        assert [e["player_id"] for e in friends["entries"]] == [banned, other]
        assert friends["not_found"] == [friend]
        with pytest.raises(PlayerNotRanked):
            await server.player(servers_only, banned)  # the public view hides them
        with pytest.raises(Forbidden):
            await game.top(servers_only, viewer=other)  # no one else's own view

        # its own runs, on a board that takes client runs: nothing else, never retried
        result = await game.submit(open_board, "c-1", banned, 40)
        assert result["standings"][0]["rank"] == 1
        assert front.seen == 1
        with pytest.raises(Forbidden) as refused:
            await game.submit(servers_only, "c-2", banned, 60)
        assert refused.value.status == 403 and "client_submits" in refused.value.message
        assert front.seen == 2  # a 403 is not retried
        with pytest.raises(Forbidden):
            await game.submit(open_board, "c-3", other, 60)
        with pytest.raises(ScoreOutOfRange):
            await game.submit(open_board, "c-4", banned, 5000)
        with pytest.raises(Forbidden):
            await game.submit_batch(
                open_board, [{"run_id": "c-5", "player_id": banned, "score": 1}]
            )
        # key routes answer a token 403
        with pytest.raises(Forbidden):
            await game.put_board(open_board, grace_seconds=1)
        with pytest.raises(Forbidden):
            await game.mint_token(banned)
        with pytest.raises(Forbidden):
            await game.get_player(banned)
        with pytest.raises(Forbidden):
            await game.ban(other)
    assert [e["player_id"] for e in (await server.top(servers_only))["entries"]] == [other]

    # the default scope is read only: no submits
    read_only = await server.mint_token(friend)
    assert read_only["scope"] == ["read"]
    async with in_process(app, read_only["token"]) as game:
        # another player's own view: the banned player's run stays out of it
        assert (await game.top(open_board))["total"] == 0
        with pytest.raises(Forbidden) as no_scope:
            await game.submit(open_board, "f-1", friend, 1)
        assert "submit" in no_scope.value.message
    submit_only = await server.mint_token(friend, scope=["submit"])
    async with in_process(app, submit_only["token"]) as game:
        with pytest.raises(Forbidden):
            await game.top(open_board)
    # a token that is not one is 401 on a read
    async with in_process(app, "not-a-key") as wrong:
        with pytest.raises(Unauthorized):
            await wrong.top(open_board)


async def test_a_players_own_runs_are_rate_limited_429_with_retry_after(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin, client_submits=True)
    player = new_player("tok-rate")
    token = (await server.mint_token(player, scope=["submit"]))["token"]
    # burst 10 at 1 run/s: FAST waits at most 10 ms, so a Retry-After of 1 s is the caller's
    async with in_process(app, token, retry=FAST) as game:
        with pytest.raises(RateLimited) as limited:
            for i in range(15):
                await game.submit(board_id, f"r-{i}", player, i)
    assert limited.value.status == 429
    assert limited.value.retry_after is not None and limited.value.retry_after >= 1


async def test_top_pages_follow_cursors(admin: AsyncRankdClient, server: AsyncRankdClient) -> None:
    board_id = await new_board(admin)
    for i in range(7):
        await server.submit(board_id, f"c{i}", f"cp{i}", i)
    first = await server.top(board_id, 3)
    second = await server.top(board_id, 3, cursor=first["next_cursor"])
    last = await server.top(board_id, 3, cursor=second["next_cursor"])
    pages = [first, second, last]
    assert [[e["rank"] for e in p["entries"]] for p in pages] == [[1, 2, 3], [4, 5, 6], [7]]
    assert last["next_cursor"] is None


async def test_standings_one_player_across_boards(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    weekly_first = await new_board(admin, windows=["weekly", "all-time"], order="asc")
    plain = await new_board(admin)
    empty = await new_board(admin)
    missing = new_board_id("missing")
    player, rival = new_player("st"), new_player("st-rival")
    for board_id in (weekly_first, plain):
        await server.submit(board_id, f"{board_id}-1", player, 70)
        await server.submit(board_id, f"{board_id}-2", rival, 50)

    found = await server.standings(player, [weekly_first, plain, empty, missing])
    assert found["player_id"] == player
    by_board = {s["board_id"]: s for s in found["standings"]}
    assert set(by_board) == {weekly_first, plain}
    assert by_board[weekly_first]["window"] == "weekly"  # each board's first window
    assert (by_board[weekly_first]["rank"], by_board[weekly_first]["total"]) == (2, 2)
    assert (by_board[plain]["window"], by_board[plain]["rank"]) == ("all-time", 1)
    assert by_board[plain]["score"] == 70 and by_board[plain]["achieved_at"].endswith("Z")
    assert found["unknown_boards"] == [missing]
    all_time = await server.standings(player, (weekly_first, plain), "all-time")
    assert {s["window"] for s in all_time["standings"]} == {"all-time"}
    weekly = await server.standings(player, [weekly_first, plain], window="weekly")
    assert [s["board_id"] for s in weekly["standings"]] == [weekly_first]  # plain has none
    with pytest.raises(InvalidRequest):
        await server.standings(player, [], "weekly")
    with pytest.raises(InvalidRequest):
        await server.standings(player, [plain], "yearly")

    # banned: gone from the public answer, still in the player's own (token or viewer=)
    await admin.ban(player)

    async def hidden() -> bool:
        return (await server.standings(player, [plain]))["standings"] == []

    assert await wait_until(hidden)
    assert len((await server.standings(player, [plain], viewer=player))["standings"]) == 1
    token = (await server.mint_token(player))["token"]
    async with in_process(app, token) as game:
        own = await game.standings(player, [weekly_first, plain])
        assert {s["board_id"] for s in own["standings"]} == {weekly_first, plain}
    async with in_process(app, key=None) as public:
        with pytest.raises(Unauthorized):
            await public.standings(player, [plain], viewer=player)


# --- entry metadata (v1.3) ----------------------------------------------------------------


def metadata_by_player(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {e["player_id"]: e["metadata"] for e in entries}


async def test_metadata_is_submitted_with_runs_and_read_back_with_include(
    admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin)
    car = {"car": "red-7", "laps": [61.2, 60.9], "nested": {"ok": True, "none": None}}
    ann, bob, cat = new_player("md-ann"), new_player("md-bob"), new_player("md-cat")
    result = await server.submit(board_id, "m-1", ann, 50, metadata=car)
    assert result["standings"][0]["rank"] == 1
    await server.submit(board_id, "m-2", bob, 40)  # none
    batch = await server.submit_batch(
        board_id,
        [
            {"run_id": "m-3", "player_id": cat, "score": 30, "metadata": {"car": "blue"}},
            {"run_id": "m-4", "player_id": cat, "score": 99, "metadata": {"k": "x" * 1100}},
        ],
    )
    assert "standings" in batch[0] and batch[1]["error"]["code"] == "invalid_request"
    expected = {ann: car, bob: None, cat: {"car": "blue"}}

    top = await server.top(board_id, include="metadata")
    assert metadata_by_player(top["entries"]) == expected
    around = await server.around(board_id, bob, range=1, include="metadata")
    assert metadata_by_player(around["entries"]) == expected
    friends = await server.friends(board_id, ann, [bob, cat], include="metadata")
    assert metadata_by_player(friends["entries"]) == expected
    me = await server.player(board_id, ann, include="metadata")
    assert (me["rank"], me["metadata"]) == (1, car)
    assert (await server.player(board_id, bob, include="metadata"))["metadata"] is None
    page = await server.top(board_id, n=1, include="metadata")
    rest = await server.top(board_id, n=2, cursor=page["next_cursor"], include="metadata")
    assert metadata_by_player(rest["entries"]) == {bob: None, cat: {"car": "blue"}}

    # without include: no "metadata" key at all
    for entries in (
        (await server.top(board_id))["entries"],
        (await server.around(board_id, bob))["entries"],
        (await server.friends(board_id, ann, [bob, cat]))["entries"],
        [await server.player(board_id, ann)],
    ):
        assert entries and all("metadata" not in e for e in entries)


async def test_bad_metadata_is_invalid_request_and_stores_nothing(
    app: FastAPI, admin: AsyncRankdClient
) -> None:
    board_id = await new_board(admin)
    player = new_player("md-bad")
    front = Front(app, "/runs", failures=0)
    bad: list[Any] = [{f"k{i}": i for i in range(17)}, {"blob": "x" * 1100}, ["red"], "red"]
    async with in_process(front, retry=FAST) as client:
        for n, metadata in enumerate(bad):
            with pytest.raises(InvalidRequest) as refused:
                await client.submit(board_id, f"b-{n}", player, 5, metadata=metadata)
            assert (refused.value.status, refused.value.code) == (400, "invalid_request")
            assert "metadata" in refused.value.message
        assert front.seen == len(bad)  # a 400 is not retried
        with pytest.raises(PlayerNotRanked):
            await client.player(board_id, player)
        # the bounds themselves are taken: 16 keys, 1,024 bytes encoded
        most = {f"k{i:02d}": "v" for i in range(16)}
        exact = {"blob": "x" * (1024 - len('{"blob":""}'))}
        await client.submit(board_id, "ok-1", player, 5, metadata=most)
        await client.submit(board_id, "ok-2", new_player("md-exact"), 4, metadata=exact)
        top = await client.top(board_id, include="metadata")
        assert [e["metadata"] for e in top["entries"]] == [most, exact]


def test_metadata_and_include_are_sent_only_when_given() -> None:
    assert "metadata" not in run_body("r", "p", 1, None, None)
    assert run_body("r", "p", 1, None, None, {"car": "red"})["metadata"] == {"car": "red"}
    where = where_params(None, None, None)
    assert "include" not in top_call("b", 10, 0, where).params
    with_include = where_params(None, None, None, None, include="metadata")
    assert top_call("b", 10, 0, with_include).params["include"] == "metadata"


async def test_the_blocking_client_submits_and_reads_metadata(
    app: FastAPI, admin: AsyncRankdClient
) -> None:
    board_id = await new_board(admin)
    me, pal = new_player("md-sync-me"), new_player("md-sync-pal")

    def blocking(base: str) -> None:
        with RankdClient(base, SERVER) as client:
            client.submit(board_id, "s-1", me, 20, metadata={"car": "red-7", "lap": 61.2})
            client.submit_many(board_id, [{"run_id": "s-2", "player_id": pal, "score": 10}])
            with pytest.raises(InvalidRequest):
                client.submit(board_id, "s-3", pal, 30, metadata={"k": "x" * 1100})
            expected = {me: {"car": "red-7", "lap": 61.2}, pal: None}
            top = client.top(board_id, include="metadata")
            assert metadata_by_player(top["entries"]) == expected
            around = client.around(board_id, pal, include="metadata")
            assert metadata_by_player(around["entries"]) == expected
            friends = client.friends(board_id, me, [pal], include="metadata")
            assert metadata_by_player(friends["entries"]) == expected
            assert client.player(board_id, me, include="metadata")["metadata"] == expected[me]
            assert "metadata" not in client.player(board_id, me)
            assert all("metadata" not in e for e in client.top(board_id)["entries"])

    async with serving(app) as base:
        await asyncio.to_thread(blocking, base)


@pytest.fixture(scope="module")
async def untokened(urls: Urls) -> AsyncIterator[FastAPI]:
    """A service without RANKD_PLAYER_TOKEN_SECRET: player tokens are off."""
    app = create_app(make_settings(urls, player_token_secret=[]))
    async with app.router.lifespan_context(app):
        yield app


async def test_without_a_secret_minting_is_501_not_enabled(untokened: FastAPI) -> None:
    front = Front(untokened, "/tokens", failures=0)
    async with in_process(front, retry=FAST) as client:
        with pytest.raises(NotEnabled) as off:
            await client.mint_token(new_player("off"), scope=["read"])
    assert (off.value.status, off.value.code) == (501, "not_enabled")
    assert "RANKD_PLAYER_TOKEN_SECRET" in off.value.message
    assert front.seen == 1


async def test_4xx_and_501_are_never_retried(app: FastAPI, admin: AsyncRankdClient) -> None:
    board_id = await new_board(admin)
    for status, code, error in (
        (403, "forbidden", Forbidden),
        (501, "not_implemented", NotBuilt),
        (501, "not_enabled", NotEnabled),
    ):
        front = Front(app, "/runs", failures=1, status=status, code=code)
        async with in_process(front, retry=FAST) as client:
            with pytest.raises(error) as refused:
                await client.submit(board_id, f"r-{status}-{code}", "p1", 5)
            assert (refused.value.status, refused.value.code) == (status, code)
            assert front.seen == 1
            # the next call is not refused by the front: the run was never sent twice
            await client.submit(board_id, f"r-{status}-{code}", "p1", 5)
            assert front.seen == 2


# --- tournaments: joining a scheduled board's occurrence (v1.3) ---------------------------


async def test_join_a_capped_occurrence_board_full_and_not_open(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin, **open_schedule(join_required=True, max_entrants=2))
    board = await server.get_board(board_id)
    assert (board["join_required"], board["max_entrants"], board["max_attempts"]) == (True, 2, 0)
    current, upcoming = board.get("current_period"), board.get("next_period")
    assert current is not None and upcoming is not None
    ann, bob, cat = new_player("join-ann"), new_player("join-bob"), new_player("join-cat")

    front = Front(app, "/join", failures=0)
    async with in_process(front, retry=FAST) as client:
        joined = await client.join(board_id, ann)
        assert joined == {"player_id": ann, "period": current["period"], "joined": True}
        assert await client.join(board_id, ann) == joined  # again: harmless, no second place
        assert front.seen == 2

        # a player token with the join scope joins its own player: the second place
        issued = await server.mint_token(bob, scope=["join"])
        async with in_process(app, issued["token"]) as game:
            with pytest.raises(Forbidden):
                await game.join(board_id, cat)  # another player
            assert (await game.join(board_id, bob))["player_id"] == bob
        async with in_process(app, (await server.mint_token(cat))["token"]) as reader:
            with pytest.raises(Forbidden) as no_scope:
                await reader.join(board_id, cat)  # read only: no join scope
            assert "join" in no_scope.value.message

        with pytest.raises(BoardFull) as full:
            await client.join(board_id, cat)
        assert (full.value.status, full.value.code) == (409, "board_full")
        assert isinstance(full.value, RankdAPIError)
        assert front.seen == 3  # a 409 is not retried
        # each occurrence afresh: the next one, named, has its places
        later = await client.join(board_id, cat, period=upcoming["period"])
        assert later == {"player_id": cat, "period": upcoming["period"], "joined": True}

        plain = await new_board(admin)  # no schedule: nothing to join
        with pytest.raises(NotOpen) as not_open:
            await client.join(plain, ann)
        assert (not_open.value.status, not_open.value.code) == (409, "not_open")
        with pytest.raises(NotOpen):
            await client.join(board_id, ann, period="20200101T0000Z")  # not an occurrence
        assert front.seen == 6
        with pytest.raises(BoardNotFound):
            await client.join(new_board_id("missing"), ann)

    # only the joined players' runs count in the occurrence; the others' status says why
    inside = await server.submit(board_id, "j-1", ann, 40)
    outside = await server.submit(board_id, "j-2", cat, 90)
    statuses = {s["window"]: s["status"] for s in outside["standings"]}
    assert statuses == {"all-time": "ranked", "scheduled": "not_joined"}
    [counted] = [s for s in inside["standings"] if s["window"] == "scheduled"]
    assert (counted["status"], counted["period"], counted.get("rank")) == (
        "ranked",
        current["period"],
        1,
    )
    top = await server.top(board_id, window="scheduled")
    assert [e["player_id"] for e in top["entries"]] == [ann]


async def test_the_blocking_client_joins(app: FastAPI, admin: AsyncRankdClient) -> None:
    board_id = await new_board(admin, **open_schedule(max_entrants=1))
    plain = await new_board(admin)
    first, second = new_player("join-sync-1"), new_player("join-sync-2")

    def blocking(base: str) -> None:
        with RankdClient(base, SERVER) as client:
            assert client.join(board_id, first)["joined"] is True
            with pytest.raises(BoardFull):
                client.join(board_id, second)
            with pytest.raises(NotOpen):
                client.join(plain, first)

    async with serving(app) as base:
        await asyncio.to_thread(blocking, base)


async def test_league_reads_of_both_clients(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    league = {"window": "weekly", "tiers": ["bronze", "silver"], "cohort_size": 5}
    board_id = await new_board(admin, windows=["weekly"], league=league)
    # promote and relegate default to 5, or half a smaller cohort
    assert (await admin.get_board(board_id))["league"] == {**league, "promote": 2, "relegate": 2}
    players = [new_player(f"lg-{i}") for i in range(7)]
    for i, player in enumerate(players):
        await server.submit(board_id, f"r{i}", player, 10 * i, metadata={"car": f"c{i}"})
    mine = await server.league(board_id, players[6], include="metadata")
    assert (mine["tier"], mine["cohort"]) == ("bronze", "bronze-2")
    assert [e["player_id"] for e in mine["entries"]] == [players[6], players[5]]
    assert [e["zone"] for e in mine["entries"]] == ["promote", "promote"]  # two of two
    assert mine["entries"][0]["metadata"] == {"car": "c6"}
    first = await server.cohort(board_id, "bronze-1")
    assert [e["rank"] for e in first["entries"]] == [1, 2, 3, 4, 5]
    history = await server.leagues(players[0], board_id)
    assert (history["tier"], history["history"], history["player_id"]) == ("bronze", [], players[0])
    with pytest.raises(PlayerNotRanked):
        await server.league(board_id, new_player("lg-none"))
    with pytest.raises(InvalidRequest):
        await server.cohort(board_id, "gold-1")

    def blocking(base: str) -> None:
        with RankdClient(base, SERVER) as client:
            plain = [{k: v for k, v in e.items() if k != "metadata"} for e in mine["entries"]]
            assert client.league(board_id, players[6]) == {**mine, "entries": plain}
            assert client.cohort(board_id, "bronze-1") == first
            assert client.leagues(players[0], board_id) == history

    async with serving(app) as base:
        await asyncio.to_thread(blocking, base)


def test_join_sends_its_period_only_when_given() -> None:
    call = join_call("a b", "p/1", None)
    assert (call.method, call.path, call.params, call.body) == (
        "POST",
        "/v1/boards/a%20b/players/p%2F1/join",
        {},
        None,
    )
    assert not call.idempotent_submit  # only submits are retried
    assert join_call("b", "p", "20261205T1800Z").params == {"period": "20261205T1800Z"}


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

        def blocking_token() -> tuple[list[str], list[str]]:
            with RankdClient(base, SERVER) as client:
                issued = client.mint_token("p1", scope=["read"], ttl_s=60)
            with RankdClient(base, issued["token"]) as game:
                mine = game.player(board_id, "p1")
                assert mine["rank"] == 2
                found = game.standings("p1", [board_id, "no-such-board"])
                return [s["board_id"] for s in found["standings"]], found["unknown_boards"]

        def blocking_admin() -> None:
            with RankdClient(base, ADMIN) as client:
                assert client.segments(board_id)["segments"] == []
                hooked = client.put_board(board_id, hooks={"period_closed": HOOK})
                assert hooked["hooks"] == {"period_closed": HOOK}
                assert client.get_board(board_id)["hooks"] == {"period_closed": HOOK}
                assert client.deliveries(board_id, limit=5) == []
                with RankdClient(base, SERVER) as other, pytest.raises(Forbidden):
                    other.deliveries(board_id)
                assert client.bans(limit=1)["bans"] is not None
                erased = new_board_id("socket-erased")  # erasures are global: nobody else's
                assert client.erase_player(erased) == {"player_id": erased, "erased": True}
                assert client.delete_board(board_id) == {"board_id": board_id, "deleted": True}

        assert await asyncio.to_thread(blocking) == (2, ["p2", "p1"])
        assert await asyncio.to_thread(blocking_token) == ([board_id], ["no-such-board"])
        async with AsyncRankdClient(base) as public:
            assert (await public.rank_of(board_id, 15))["rank"] == 2
        await asyncio.to_thread(blocking_admin)
    finally:
        server.should_exit = True
        await serving


# --- a player's own events (v1.3), over a real socket: streams need one --------------------


async def next_event(stream: AsyncGenerator[PlayerEvent, None]) -> PlayerEvent:
    async with asyncio.timeout(5):  # the same task throughout: no task per event
        return await anext(stream)


@pytest.mark.timeout(60)
async def test_player_events_rank_changes_friends_passing_and_tokens(
    app: FastAPI, admin: AsyncRankdClient, server: AsyncRankdClient
) -> None:
    board_id = await new_board(admin)
    me, pal, rival = new_player("pe-me"), new_player("pe-pal"), new_player("pe-rival")
    await server.submit(board_id, "r-1", me, 50)
    await server.submit(board_id, "r-2", pal, 10)
    period = (await server.player(board_id, me))["period"]

    def standing(rank: int, previous: int | None) -> PlayerEvent:
        return {
            "kind": "standing",
            "board_id": board_id,
            "window": "all-time",
            "period": period,
            "rank": rank,
            "previous_rank": previous,
        }

    async with serving(app) as base, AsyncRankdClient(base, SERVER) as client:
        friends = [pal, new_player("pe-stranger")]
        async with aclosing(client.player_events(me, [board_id], friends=friends)) as stream:
            assert await next_event(stream) == standing(1, None)  # on connect
            await server.submit(board_id, "r-3", rival, 70)  # no listed friend: no passed
            assert await next_event(stream) == standing(2, 1)
            await server.submit(board_id, "r-4", pal, 90)  # a friend overtakes
            assert [await next_event(stream), await next_event(stream)] == [
                standing(3, 2),
                {
                    "kind": "passed",
                    "board_id": board_id,
                    "window": "all-time",
                    "period": period,
                    "player_id": pal,
                    "rank": 1,
                    "your_rank": 3,
                },
            ]
        with pytest.raises(BoardNotFound):
            await anext(client.player_events(me, [board_id, new_board_id("missing")]))
        with pytest.raises(InvalidRequest):
            await anext(client.player_events(me, []))
        async with AsyncRankdClient(base) as public:
            with pytest.raises(Unauthorized):
                await anext(public.player_events(me, [board_id]))

        # a token client follows its own player, and no one else
        token = (await server.mint_token(me, scope=["read"]))["token"]
        async with AsyncRankdClient(base, token) as game:
            async with aclosing(game.player_events(me, [board_id])) as own:
                assert await next_event(own) == standing(3, None)
            with pytest.raises(Forbidden) as refused:
                await anext(game.player_events(pal, [board_id]))
            assert (refused.value.status, refused.value.code) == (403, "forbidden")

        def blocking() -> PlayerEvent:
            with RankdClient(base, token) as game:
                events = game.player_events(me, (board_id,), friends=[pal])
                try:
                    first = next(events)
                finally:
                    events.close()
                with pytest.raises(Forbidden):
                    next(game.player_events(rival, [board_id]))
                return first

        assert await asyncio.to_thread(blocking) == standing(3, None)


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


def test_player_events_are_tagged_with_their_kind_and_others_skipped() -> None:
    reader = EventReader()
    lines = [
        "event: standing",
        'data: {"board_id": "a", "window": "all-time", "period": "all-time", "rank": 2,',
        'data: "previous_rank": null}',
        "",
        ": heartbeat",
        "",
        "event: passed",
        'data: {"board_id": "a", "window": "all-time", "period": "all-time",',
        'data: "player_id": "77", "rank": 1, "your_rank": 2}',
        "",
        "event: later",
        'data: {"board_id": "a"}',
        "",
    ]
    found = [player_event(reader.feed(line)) for line in lines]
    assert [f for f in found if f is not None] == [
        {
            "kind": "standing",
            "board_id": "a",
            "window": "all-time",
            "period": "all-time",
            "rank": 2,
            "previous_rank": None,
        },
        {
            "kind": "passed",
            "board_id": "a",
            "window": "all-time",
            "period": "all-time",
            "player_id": "77",
            "rank": 1,
            "your_rank": 2,
        },
    ]


def test_unknown_codes_and_bodies_become_the_base_error() -> None:
    error = error_for(418, {"error": {"code": "teapot", "message": "short and stout"}})
    assert type(error) is RankdAPIError and error.code == "teapot" and error.status == 418
    gateway = error_for(503, None)
    assert isinstance(gateway, Unavailable)
    assert isinstance(error_for(501, {"error": {"code": "not_enabled", "message": ""}}), NotEnabled)
    built = error_for(501, {"error": {"code": "not_implemented", "message": "later"}})
    assert isinstance(built, NotBuilt) and built.status == 501
    full = error_for(409, {"error": {"code": "board_full", "message": "100 entrants"}})
    assert isinstance(full, BoardFull) and (full.status, full.code) == (409, "board_full")
    assert isinstance(error_for(409, {"error": {"code": "not_open", "message": ""}}), NotOpen)
    assert type(error_for(501, None)) is RankdAPIError  # a 501 without the body: not retried
