"""Small leaks: what a public reader could learn of bans and holds, or of what a banned
player sees."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from rankd.runtime import Runtime
from tests.integration.services.test_moderation_archive import set_banned
from tests.integration.services.test_seasons import (
    WINDOWS,
    closed_periods,
    job,
    put_board,
    random_board,
)
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard
from tests.support.durable import wait_consumer_idle
from tests.support.wire import iso


@pytest.fixture(autouse=True)
async def _consumer_idle_after(client: httpx.AsyncClient, runtime: Runtime) -> AsyncIterator[None]:
    """Leave the shared log consumer idle: later tests count what it applies."""
    yield
    await wait_consumer_idle(client, runtime)


async def test_public_metrics_do_not_count_bans(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    response = await client.post("/v1/players/metrics-banned/ban", headers=ADMIN_H)
    assert response.status_code == 200
    text = (await client.get("/metrics")).text
    requests = [line for line in text.splitlines() if line.startswith("rankd_request_seconds")]
    assert requests and not any("/ban" in line or "/holds" in line for line in requests)
    assert any('route="(moderation)"' in line for line in requests)
    await client.delete("/v1/players/metrics-banned/ban", headers=ADMIN_H)


async def test_periods_lists_no_period_whose_only_entries_are_banned_or_held(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(windows=["daily"], grace_seconds=30 * 86_400, hold_top=1)
    now = datetime.now(UTC)
    await set_banned(client, ["leak-banned"], True)
    try:
        for days, player in ((3, "leak-banned"), (5, "leak-held")):
            body = {
                "run_id": f"leak-{days}",
                "player_id": player,
                "score": 10,
                "ended_at": iso(now - timedelta(days=days)),
            }
            response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
            assert response.status_code == 200, response.text
        listed = await client.get(f"/v1/boards/{board}/periods", params={"window": "daily"})
        periods = {p["period"] for p in listed.json()["periods"]}
        assert periods == {now.date().isoformat()}  # the current period only
    finally:
        await set_banned(client, ["leak-banned"], False)


async def test_a_banned_players_own_view_of_an_archived_period_shows_them(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    rng = random.Random(7)
    board_id, config, _ = await random_board(client, rng, windows=["all-time", "daily"])
    closed = await closed_periods(client, board_id, config)
    window, period, _ = sorted(closed)[0]
    params: dict[str, Any] = {"window": window, "period": period}
    top = await client.get(f"/v1/boards/{board_id}/top", params={**params, "n": 1})
    player = top.json()["entries"][0]["player_id"]
    await job(runtime).run_pass(boards=[board_id])
    await put_board(client, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
    await job(runtime).run_pass(boards=[board_id])
    await set_banned(client, [player], True)
    try:
        url = f"/v1/boards/{board_id}/players/{player}"
        public = await client.get(url, params=params)
        assert public.status_code == 404  # hidden from everyone else
        own = await client.get(url, params={**params, "viewer": player}, headers=SERVER_H)
        assert own.status_code == 200, own.text
        assert own.json()["player_id"] == player and own.json()["rank"] == 1
        mine = await client.get(
            f"/v1/boards/{board_id}/top",
            params={**params, "viewer": player, "n": 3},
            headers=SERVER_H,
        )
        assert mine.json()["entries"][0]["player_id"] == player
        others = await client.get(f"/v1/boards/{board_id}/top", params={**params, "n": 3})
        assert player not in [e["player_id"] for e in others.json()["entries"]]
    finally:
        await set_banned(client, [player], False)
