"""The live page's league view in a real browser (headless Chromium, Playwright) against a
real `rankd serve`: `/?board=…&player=…` on a league board opens on the player's cohort,
ranked inside it, with the promotion and relegation lines where the moves would fall, and
follows the board's stream (a better run moves a player across a line within a second).

Skips only when no Chromium is installed, like test_live_page.py (whose fixtures it uses).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime

import httpx
import pytest
from playwright.async_api import Page, expect

from rankd.periods import period_at
from tests.support.common import ADMIN_H, new_board_id
from tests.support.durable import wait_consumer_idle
from tests.system.test_live_page import Service, page, put_board, service, submit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
__all__ = ["page", "service"]  # the fixtures, used by name

HOUR_MS = 3_600_000


def season_pass(service: Service, board: str) -> None:
    """One season pass now, settled at once (the service's own job is off in these tests)."""
    env = {**service.env, "RANKD_SEASON_SETTLE_S": "0"}
    command = [sys.executable, "-m", "rankd.cli", "freeze", "--board", board]
    done = subprocess.run(command, env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


async def close(http: httpx.AsyncClient, board: str, period: str) -> None:
    response = await http.post(
        f"/v1/boards/{board}/periods/{period}/close", params={"window": "hourly"}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text


async def test_a_players_cohort_with_its_promotion_and_relegation_lines(
    service: Service, page: Page
) -> None:
    board = new_board_id("live-league")
    now = int(datetime.now(UTC).timestamp() * 1000)
    first, second = now - 3 * HOUR_MS, now - 2 * HOUR_MS
    league = {"window": "hourly", "tiers": ["bronze", "silver", "gold"], "cohort_size": 5}
    players = [f"lp{i}" for i in range(10)]
    async with httpx.AsyncClient(base_url=service.base, timeout=10) as http:
        await put_board(
            http,
            board,
            windows=["hourly"],
            grace_seconds=86_400,
            league={**league, "promote": 1, "relegate": 1},
        )
        # the hour before the first is over (no one played it): the first hour's tiers are known
        await close(http, board, period_at("hourly", first - HOUR_MS).id)
        await asyncio.to_thread(season_pass, service, board)
        for i, player in enumerate(players):
            ended = datetime.fromtimestamp((first + i) / 1000, UTC).isoformat()
            await submit(http, board, player, 100 + i, ended_at=ended)
        await wait_consumer_idle(http, within_s=60)  # applied before the freeze
        # the first hour ends: the best of each bronze cohort (lp4, lp9) move up to silver
        await close(http, board, period_at("hourly", first).id)
        await asyncio.to_thread(season_pass, service, board)
        ended = datetime.fromtimestamp(second / 1000, UTC).isoformat()
        await submit(http, board, "lp9", 50, ended_at=ended)
        await submit(http, board, "lp4", 40, ended_at=ended)

        hour = period_at("hourly", second).id
        await page.goto(f"{service.base}/?board={board}&window=hourly&period={hour}&player=lp4")
        await expect(page.locator("#found h3").first).to_have_text("League · silver · silver-1")
        rows = page.locator("#found-league tr")
        await expect(rows).to_have_count(4)  # lp9, the promotion line, the relegation line, lp4
        await expect(rows.nth(0)).to_have_class("zone-promote")
        await expect(rows.nth(0)).to_contain_text("lp9")
        await expect(rows.nth(1)).to_have_text("▲ promotion")
        await expect(rows.nth(2)).to_have_text("▼ relegation")
        await expect(rows.nth(3)).to_have_class("zone-relegate me")
        assert "player=lp4" in page.url

        # a better run moves lp4 above the promotion line, live
        await submit(http, board, "lp4", 60, ended_at=ended)
        await expect(rows.nth(0)).to_contain_text("lp4", timeout=5000)
        await expect(rows.nth(0)).to_have_class("zone-promote me")
        await expect(rows.nth(3)).to_contain_text("lp9")

        # a board without a league shows no league section
        plain = new_board_id("live-plain")
        await put_board(http, plain, windows=["weekly"])
        await submit(http, plain, "lp4", 10)
        await page.goto(f"{service.base}/?board={plain}&player=lp4")
        await expect(page.locator("#found-around tr.me")).to_contain_text("lp4")
        await expect(page.locator("#found-league")).to_have_count(0)
