"""A player's own event stream (GET /v1/players/{id}/events, v1.3) on a real uvicorn server:
the standing on connect, a standing event when the rank changes (at most one a second per
board and window), a passed event when a listed friend overtakes the player, a banned
player's own view, a token following only its own player, bad input refused."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rankd.api.app import create_app
from rankd.runtime import Runtime
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings, new_board_id
from tests.support.live import EventStream, open_stream, serving

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
async def live_app(urls: Urls) -> AsyncIterator[FastAPI]:
    app = create_app(make_settings(urls, live_heartbeat_s=0.5, live_max_player_streams=3))
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture(scope="module")
async def http(live_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(live_app) as base,
        httpx.AsyncClient(base_url=base, timeout=10, headers=SERVER_H) as client,
    ):
        yield client


async def board(http: httpx.AsyncClient, **config: Any) -> str:
    board_id = new_board_id("pe")
    response = await http.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    return board_id


async def submit(http: httpx.AsyncClient, board_id: str, player: str, score: int) -> None:
    body = {"run_id": f"r-{player}-{time.monotonic_ns()}", "player_id": player, "score": score}
    response = await http.post(f"/v1/boards/{board_id}/runs", json=body)
    assert response.status_code == 200, response.text


async def collect(stream: EventStream, wanted: dict[str, int]) -> dict[str, list[Any]]:
    """The next events until ``wanted`` of each kind have come (others are skipped)."""
    got: dict[str, list[Any]] = {kind: [] for kind in wanted}
    deadline = time.monotonic() + 5
    while any(len(got[k]) < n for k, n in wanted.items()):
        event = await asyncio.wait_for(stream.events.get(), deadline - time.monotonic())
        if event.kind in got:
            got[event.kind].append(event.data)
    return got


async def test_rank_changes_and_friends_passing(http: httpx.AsyncClient) -> None:
    arena = await board(http, windows=["all-time", "daily"])
    await submit(http, arena, "me", 50)
    await submit(http, arena, "pal", 10)
    path = f"/v1/players/me/events?boards={arena}&friends=pal,stranger"
    async with open_stream(http, path) as stream:
        on_connect = [(await stream.next("standing")).data for _ in range(2)]
        assert {(e["window"], e["rank"], e["previous_rank"]) for e in on_connect} == {
            ("all-time", 1, None),
            ("daily", 1, None),
        }
        await submit(http, arena, "rival", 70)  # pushes me to 2nd: standing events
        moved = [(await stream.next("standing")).data for _ in range(2)]
        assert {(e["window"], e["rank"], e["previous_rank"]) for e in moved} == {
            ("all-time", 2, 1),
            ("daily", 2, 1),
        }
        assert not await stream.quiet(0.3, "passed")  # rival is no listed friend
        await submit(http, arena, "pal", 90)  # a friend overtakes: passed, and I drop again
        got = await collect(stream, {"passed": 2, "standing": 2})
        passed = {(e["window"], e["player_id"], e["rank"], e["your_rank"]) for e in got["passed"]}
        assert passed == {("all-time", "pal", 1, 3), ("daily", "pal", 1, 3)}
        assert [e["rank"] for e in got["standing"]] == [3, 3]
        # an unchanged rank sends nothing
        await submit(http, arena, "pal", 95)
        assert not await stream.quiet(1.5, "standing")


async def test_at_most_one_event_a_second_the_latest_last(http: httpx.AsyncClient) -> None:
    arena = await board(http)
    await submit(http, arena, "calm", 1000)
    async with open_stream(http, f"/v1/players/calm/events?boards={arena}") as stream:
        await stream.next("standing")
        for i in range(8):  # eight players pass one after another
            await submit(http, arena, f"fast{i}", 2000 + i)
        # every standing until the latest (rank 9), however long a loaded machine takes
        events = [await stream.next("standing", within=15)]
        while events[-1].data["rank"] != 9:
            events.append(await stream.next("standing", within=15))
        events += await stream.quiet(1.5, "standing")  # and nothing after it
        assert events[-1].data["rank"] == 9
        # a second apart, less the time this loop may take to get to an event when busy
        times = [e.at for e in events]
        assert all(b - a >= 0.7 for a, b in itertools.pairwise(times)), times


async def test_a_banned_player_sees_their_own_view(http: httpx.AsyncClient) -> None:
    arena = await board(http)
    banned = new_board_id("peb")
    await submit(http, arena, banned, 500)
    await submit(http, arena, "other", 100)
    assert (await http.post(f"/v1/players/{banned}/ban", headers=ADMIN_H)).status_code == 200
    try:
        async with open_stream(http, f"/v1/players/{banned}/events?boards={arena}") as stream:
            assert (await stream.next("standing")).data["rank"] == 1
            await submit(http, arena, "climber", 900)
            assert (await stream.next("standing")).data["rank"] == 2
    finally:
        await http.delete(f"/v1/players/{banned}/ban", headers=ADMIN_H)


async def test_a_token_follows_its_own_player_only(http: httpx.AsyncClient) -> None:
    arena = await board(http)
    minted = await http.post("/v1/players/tok/tokens", json={})
    token = {"Authorization": f"Bearer {minted.json()['token']}"}
    async with httpx.AsyncClient(base_url=str(http.base_url), headers=token) as player:
        await submit(http, arena, "tok", 5)
        async with open_stream(player, f"/v1/players/tok/events?boards={arena}") as stream:
            assert (await stream.next("standing")).data["rank"] == 1
        other = await player.get(f"/v1/players/someone/events?boards={arena}")
        assert other.status_code == 403
    async with httpx.AsyncClient(base_url=str(http.base_url)) as anonymous:
        response = await anonymous.get(f"/v1/players/tok/events?boards={arena}")
        assert response.status_code == 401


@pytest.mark.parametrize(
    "query",
    [
        "",
        "boards=",
        "boards=Bad!",
        "boards=" + ",".join(f"b{i}" for i in range(21)),
        "boards=ok&friends=" + ",".join(f"f{i}" for i in range(101)),
        "boards=ok&friends=bad%20id",
    ],
)
async def test_bad_input_is_400(http: httpx.AsyncClient, query: str) -> None:
    response = await http.get(f"/v1/players/p1/events?{query}")
    assert response.status_code == 400, response.text


async def test_an_unknown_board_is_404_and_the_cap_is_503(
    http: httpx.AsyncClient, live_app: FastAPI
) -> None:
    missing = await http.get(f"/v1/players/p1/events?boards={new_board_id('none')}")
    assert missing.status_code == 404
    arena = await board(http)
    rt: Runtime = live_app.state.runtime
    path = f"/v1/players/p1/events?boards={arena}"
    async with open_stream(http, path), open_stream(http, path), open_stream(http, path):
        assert rt.players_live.count == 3
        refused = await http.get(path)
        assert refused.status_code == 503
    deadline = time.monotonic() + 30
    while rt.players_live.count:  # each closed stream gives its slot back
        assert time.monotonic() < deadline
        await http.get("/healthz")
    assert not rt.players_live.watches


async def test_a_deleted_board_ends_its_player_streams(http: httpx.AsyncClient) -> None:
    arena = await board(http)
    await submit(http, arena, "gone", 5)
    async with http.stream("GET", f"/v1/players/gone/events?boards={arena}") as response:
        assert response.status_code == 200
        lines = response.aiter_lines()
        async with asyncio.timeout(5):
            async for line in lines:
                if line.startswith("event: standing"):
                    break
        deleted = await http.delete(f"/v1/boards/{arena}", headers=ADMIN_H)
        assert deleted.status_code == 200
        async with asyncio.timeout(15):  # the stream ends (heartbeats until then)
            async for _line in lines:
                pass
