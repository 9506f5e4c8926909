"""Bans reach archived periods too: a player banned after a period was archived is left
out of its reads exactly as Redis's :shadow leaves them out of a live one, and an unban
brings them back."""

from __future__ import annotations

import random

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankd.runtime import Runtime
from rankd.stores.archive import Hidden
from tests.integration.services.test_seasons import (
    WINDOWS,
    closed_periods,
    every_read,
    job,
    put_board,
    random_board,
)
from tests.support.common import ADMIN_H


async def set_banned(client: httpx.AsyncClient, players: list[str], banned: bool) -> None:
    for player in players:
        method = client.post if banned else client.delete
        response = await method(f"/v1/players/{player}/ban", headers=ADMIN_H)
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("seed", range(2))
async def test_an_archived_period_hides_a_banned_player_as_redis_did(
    client: httpx.AsyncClient, runtime: Runtime, seed: int
) -> None:
    rng = random.Random(100 + seed)
    board_id, config, players = await random_board(client, rng)
    closed = await closed_periods(client, board_id, config)
    everyone = await every_read(client, board_id, config, players)
    banned = rng.sample(players, 4)

    await set_banned(client, banned, True)  # live (closed, in Redis): moved to :shadow
    hidden_live = await every_read(client, board_id, config, players)
    assert hidden_live != everyone
    await set_banned(client, banned, False)
    assert await every_read(client, board_id, config, players) == everyone

    await job(runtime).run_pass(boards=[board_id])
    await put_board(client, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
    report = await job(runtime).run_pass(boards=[board_id])
    assert report.archived == len(closed)
    assert await every_read(client, board_id, config, players) == everyone  # the archive

    await set_banned(client, banned, True)
    try:
        assert await every_read(client, board_id, config, players) == hidden_live
    finally:
        await set_banned(client, banned, False)
    assert await every_read(client, board_id, config, players) == everyone


@settings(max_examples=200, deadline=None)
@given(
    hidden=st.lists(st.integers(1, 60), unique=True, max_size=20).map(sorted),
    shown=st.integers(1, 40),
)
def test_hidden_ranks_map_shown_positions_to_archived_ranks(hidden: list[int], shown: int) -> None:
    h = Hidden(tuple(hidden), tuple(0 for _ in hidden))
    visible = [r for r in range(1, 200) if r not in hidden]
    raw = h.raw_rank(shown)
    assert raw == visible[shown - 1]
    assert h.shown_rank(raw) == shown and not h.hides(raw)
    assert all(h.hides(r) for r in hidden)
