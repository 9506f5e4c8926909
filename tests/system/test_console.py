"""The console at /console in a real browser (headless Chromium driven by Playwright)
against a real `rankd serve` process: signing in keeps the admin key in the tab's
sessionStorage only; a held run approved from the review queue (by keyboard) reaches the
board and a rejected one never does; a ban from the players view hides the player from the
public top and records the reason typed (GET /v1/bans lists it), an empty reason is a ban
without one, and lifting it brings them back; erasing asks for the id first; removing one
entry (after a confirmation) takes it out of that board's top for that window only, and a
refused removal shows the API's error; a bad board definition shows the API's own error
beside the field it names; a window's own policy (window_policies) is set and cleared from
the board form; closing the current weekly period (after a confirmation, "closing…" while
the call runs) lists it closed and a run sent afterwards answers closed there, and a
refused close shows the API's error; a scheduled board with a webhook is made from the form
(a refused schedule shows the API's words on the schedule field it names), its panel shows
its open and next occurrence, and, once an occurrence closed from the console is frozen
(`rankd freeze`), the delivery log shows the receiver's 503 and then the delivery done; the
hook is removed and the schedule's end moved from the form; a hostile player name or ban
reason is shown as text, never as markup.

Skips only when no Chromium is installed (as tests/system/test_live_page.py). With
RANKD_UPDATE_SCREENSHOT=1 it also writes docs/console-*.png for docs/console.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, async_playwright, expect

from rankd.embedded import start_embedded
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.common import (
    ADMIN,
    ADMIN_H,
    SERVER,
    SERVER_H,
    WEBHOOK_SECRET,
    Urls,
    new_board_id,
)
from tests.support.live import free_port
from tests.support.receiver import receiver
from tests.support.wire import iso

# Playwright's default 5 s per assertion is too short on a loaded CI box (three test
# workers on two cores): a console step once took longer there and failed a passing test
expect.set_options(timeout=15_000)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'
REASON = "speed hack: 3 runs under the track record"


@pytest.fixture(scope="module")
def urls() -> Iterator[Urls]:
    """Servers of this module's own. On the test worker's shared ones, `rankd serve` first
    restores whatever other tests left behind (periods whose keys they removed are rebuilt
    before it answers), which once kept it from answering for over two minutes in CI."""
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set RANKD_CHROMIUM)")
    with tempfile.TemporaryDirectory(prefix="rankd-console-") as path:
        servers = start_embedded(Path(path))
        try:
            yield Urls(servers.redis_url, servers.postgres_url, servers.nats_url)
        finally:
            servers.stop()


@pytest.fixture(scope="module")
def service(urls: Urls) -> Iterator[str]:
    """`rankd serve` in a process of its own, on the session's servers: its base URL."""
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set RANKD_CHROMIUM)")
    base = f"http://127.0.0.1:{free_port()}"
    env = os.environ | {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_ADMIN_KEYS": ADMIN,
        "RANKD_SERVER_KEYS": SERVER,
        "RANKD_WEBHOOK_SECRET": WEBHOOK_SECRET,  # boards with hooks; this service sends them
        "RANKD_SEASON_JOB_INTERVAL_S": "0",
        "RANKD_LOG_LEVEL": "warning",
    }
    port = base.rpartition(":")[2]
    process = subprocess.Popen(
        [sys.executable, "-m", "rankd.cli", "serve", "--port", port], env=env
    )
    try:
        # other tests of this worker's servers may leave log messages the new instance
        # waits on at start (redelivered with backoff): generous, and says why if not
        deadline, said = time.monotonic() + 120, "no answer"
        while True:
            with contextlib.suppress(httpx.TransportError):
                ready = httpx.get(f"{base}/readyz", timeout=2)
                if ready.status_code == 200:
                    break
                said = ready.text
            assert process.poll() is None, "rankd serve exited"
            assert time.monotonic() < deadline, f"rankd serve did not become ready: {said}"
            time.sleep(0.2)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
async def page(service: str) -> AsyncIterator[Page]:
    """A fresh browser per test, so its own sessionStorage and sign-in. Any script error,
    or anything the page's Content-Security-Policy refused, fails the test."""
    problems: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 760}, locale="en-GB")
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on(
                "console",
                lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
            )
            yield page
        finally:
            await browser.close()
    assert not problems, problems


@pytest.fixture
async def http(service: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=service, timeout=10) as client:
        yield client


async def put(http: httpx.AsyncClient, path: str, **body: Any) -> None:
    """A board (admin key) or a player's name (server key)."""
    headers = ADMIN_H if path.startswith("/v1/boards/") else SERVER_H
    response = await http.put(path, json=body, headers=headers)
    assert response.status_code in (200, 201), response.text


async def standings(
    http: httpx.AsyncClient, board_id: str, player: str, score: int
) -> list[dict[str, Any]]:
    """Submits a run; answers its standings (one per window of the board, first first)."""
    run = {"run_id": f"console-{player}-{time.monotonic_ns()}", "player_id": player, "score": score}
    response = await http.post(f"/v1/boards/{board_id}/runs", json=run, headers=SERVER_H)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["standings"]
    return found


async def submit(http: httpx.AsyncClient, board_id: str, player: str, score: int) -> str:
    """Submits a run; answers its status in the board's first window (ranked or held)."""
    status: str = (await standings(http, board_id, player, score))[0]["status"]
    return status


async def run_statuses(
    http: httpx.AsyncClient, board_id: str, player: str, score: int
) -> dict[str, str]:
    """Submits a run; answers its status in each window of the board."""
    return {s["window"]: s["status"] for s in await standings(http, board_id, player, score)}


async def ban_reasons(http: httpx.AsyncClient) -> dict[str, str | None]:
    """The players banned now, with the reason of each (GET /v1/bans, admin key)."""
    response = await http.get("/v1/bans", params={"limit": 1000}, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    return {b["player_id"]: b["reason"] for b in response.json()["bans"]}


def listed_reason(page: Page, player: str) -> Locator:
    """The reason cell of a player's row in the console's list of bans."""
    return page.locator("#bans tbody tr", has_text=player).locator(".reason-text")


async def top_players(
    http: httpx.AsyncClient, board_id: str, window: str | None = None
) -> list[str]:
    params: dict[str, str | int] = {"n": 100} | ({} if window is None else {"window": window})
    response = await http.get(f"/v1/boards/{board_id}/top", params=params)
    assert response.status_code == 200, response.text
    return [e["player_id"] for e in response.json()["entries"]]


async def sign_in(page: Page, service: str, path: str = "") -> None:
    await page.goto(f"{service}/console{path}")
    await page.fill("#key", ADMIN)
    await page.click("#signin-form button")
    await expect(page.locator("#tabs")).to_be_visible()


async def shoot(page: Page, name: str) -> None:
    if os.environ.get("RANKD_UPDATE_SCREENSHOT"):
        await page.wait_for_timeout(300)  # the health strip's first answers
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=str(DOCS / f"console-{name}.png"), full_page=True)


async def test_the_key_stays_in_the_tab(service: str, page: Page) -> None:
    await page.goto(f"{service}/console")
    await expect(page.locator("#signin")).to_be_visible()
    # the health strip, before signing in: /readyz is public
    await expect(page.locator("#h-state")).to_have_text(re.compile(r"^(ready|degraded)$"))
    for key, said in (("not-a-key", "does not accept"), (SERVER, "not an admin key")):
        await page.fill("#key", key)
        await page.click("#signin-form button")
        await expect(page.locator("#signin-error")).to_contain_text(said)
    await page.fill("#key", ADMIN)
    await page.press("#key", "Enter")
    await expect(page.locator("#tabs")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('rankd.console.key')") == ADMIN
    assert await page.evaluate("localStorage.length") == 0
    assert await page.evaluate("document.cookie") == ""
    assert ADMIN not in page.url
    assert await page.input_value("#key") == ""
    # a reload keeps the tab signed in; signing out forgets the key
    await page.reload()
    await expect(page.locator("#tabs")).to_be_visible()
    await page.click("#signout")
    await expect(page.locator("#signin")).to_be_visible()
    assert await page.evaluate("sessionStorage.length") == 0


async def test_a_held_run_approved_from_the_console_reaches_the_board(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-cup")
    await put(http, f"/v1/boards/{board_id}", windows=["all-time", "weekly"])
    for i, (player, shown) in enumerate(
        [("c-ana", "ana"), ("c-bo", "bo_speed"), ("c-cy", "cyra"), ("c-dee", "dee")]
    ):
        await put(http, f"/v1/players/{player}", name=shown)
        assert await submit(http, board_id, player, 40_000 - 5_000 * i) == "ranked"
    # from now on a run that would enter the top 3 waits for a moderator
    await put(http, f"/v1/boards/{board_id}", hold_top=3)
    for player, shown, points in (("c-eve", "eve", 41_000), ("c-fay", "fay", 40_500)):
        await put(http, f"/v1/players/{player}", name=shown)
        assert await submit(http, board_id, player, points) == "held"
    await put(http, "/v1/players/c-hax", name="xX_h4x_Xx")
    assert await submit(http, board_id, "c-hax", 900_000) == "held"

    await sign_in(page, service)
    rows = page.locator(f'#queue-rows tr[data-key^="{board_id}"]')
    await expect(rows).to_have_count(3)
    eve, fay, hax = rows.nth(0), rows.nth(1), rows.nth(2)  # oldest first
    await expect(eve.locator(".name")).to_have_text("eve")
    await expect(hax.locator(".name")).to_have_text("xX_h4x_Xx")
    await expect(hax.locator(".vs")).to_have_text("+2,150 %")  # 900,000 against 40,000
    await expect(hax.locator(".vs")).to_have_class("num vs far")
    await expect(page.locator("#keys")).to_contain_text("approve")

    # the cursor on eve's run: the context a moderator decides from
    await eve.click()
    detail = page.locator("#queue-detail")
    await expect(detail.locator("h2")).to_have_text("eve")
    await expect(detail.locator(".rank-row").first).to_contain_text("#1 of 4 now")
    await expect(detail.locator(".rank-row").first).to_contain_text("+3 %")
    await expect(detail).to_contain_text("None on any board's current period.")
    # j moves down to the cheat's run, whose context shows how far past the top it is
    await page.keyboard.press("j")
    await expect(fay).to_have_class("cursor")
    await page.keyboard.press("j")
    await expect(hax).to_have_class("cursor")
    await expect(detail.locator("h2")).to_have_text("xX_h4x_Xx")
    await expect(detail.locator(".rank-row").first.locator(".far")).to_have_text("+2,150 %")
    await shoot(page, "queue")
    # r rejects the run under the cursor; the cursor stays in the list
    await page.keyboard.press("r")
    await expect(page.locator("#toast")).to_contain_text("Rejected 1 run")
    await expect(rows).to_have_count(2)
    await expect(fay).to_have_class("cursor")
    # x selects (Esc clears); a then approves the selection, after a confirmation
    await page.keyboard.press("x")
    await page.keyboard.press("Escape")
    await expect(page.locator("#queue-approve")).to_have_text("Approve (a)")
    for key in "xkx":
        await page.keyboard.press(key)
    await expect(page.locator("#queue-approve")).to_have_text("Approve 2 (a)")
    await page.keyboard.press("a")
    await expect(page.locator("#confirm-title")).to_have_text("Approve 2 held runs?")
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text("Approved 2 runs")
    await expect(rows).to_have_count(0)

    # on the board through the public reads: eve and fay published, the cheat never
    listed = await top_players(http, board_id)
    assert listed[:2] == ["c-eve", "c-fay"], listed
    assert "c-hax" not in listed
    holds = await http.get(f"/v1/boards/{board_id}/holds", headers=ADMIN_H)
    assert holds.json()["holds"] == []


async def test_a_ban_from_the_console_hides_the_player(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-ban")
    await put(http, f"/v1/boards/{board_id}", windows=["all-time", "weekly"])
    for player, shown, points in (("b-kai", "kai_runs", 900), ("b-lu", "lu", 500)):
        await put(http, f"/v1/players/{player}", name=shown)
        await submit(http, board_id, player, points)
    assert "b-kai" in await top_players(http, board_id)

    await sign_in(page, service, "#players/b-kai")
    await expect(page.locator("#p-name")).to_have_text("kai_runs")
    await expect(page.locator("#p-status")).to_have_text("not banned")
    entries = page.locator("#p-entries tbody tr", has_text=board_id)
    await expect(entries).to_have_count(2)  # all-time and weekly
    await expect(entries.first).to_contain_text("public")
    # each entry can be removed (test_an_entry_removed_from_the_console_...)
    await expect(entries.first.locator("button")).to_be_enabled()
    await expect(entries.first.locator("button")).to_have_text("Remove entry…")

    # the reason typed goes with the ban, and is what GET /v1/bans lists
    await expect(page.locator("#p-reason")).to_be_enabled()
    await page.fill("#p-reason", f"  {REASON} ")
    await page.click("#p-ban")
    await expect(page.locator("#confirm")).to_be_visible()
    await expect(page.locator("#confirm-text")).to_contain_text(f"“{REASON}”")
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text("Banned b-kai")
    await expect(page.locator("#p-status")).to_have_text("banned")
    await expect(page.locator("#p-ban-note")).to_contain_text("Banned since")
    await expect(page.locator("#p-ban-reason-text")).to_have_text(REASON)
    await expect(page.locator("#p-reason")).to_be_disabled()
    await expect(page.locator("#p-reason")).to_have_value("")
    await expect(entries.first).to_contain_text("hidden: banned")
    await expect(page.locator("#bans tbody tr", has_text="b-kai")).to_have_count(1)
    await expect(listed_reason(page, "b-kai")).to_have_text(REASON)
    assert (await ban_reasons(http))["b-kai"] == REASON  # as typed, but for the spaces around
    await shoot(page, "players")
    # the public top no longer shows them (within a second, per the API)
    deadline = time.monotonic() + 2
    while "b-kai" in await top_players(http, board_id):
        assert time.monotonic() < deadline, "the banned player still shows"
        await page.wait_for_timeout(100)

    await page.click("#p-unban")
    await page.click("#confirm-ok")
    await expect(page.locator("#p-status")).to_have_text("not banned")
    await expect(page.locator("#p-ban-reason")).to_be_hidden()
    await expect(page.locator("#p-reason")).to_be_enabled()
    assert "b-kai" in await top_players(http, board_id)
    assert "b-kai" not in await ban_reasons(http)

    await page.fill("#lookup-id", "b-lu")
    await page.press("#lookup-id", "Enter")
    await expect(page.locator("#p-name")).to_have_text("lu")
    # a reason the API refuses (not printable) is its message, and stays in the field to fix
    await page.fill("#p-reason", "two\tcolumns")
    await page.click("#p-ban")
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text("printable characters")
    await expect(page.locator("#p-reason")).to_have_value("two\tcolumns")
    await expect(page.locator("#p-status")).to_have_text("not banned")
    assert "b-lu" not in await ban_reasons(http)
    # an empty reason: a ban without one
    await page.fill("#p-reason", "")
    await page.click("#p-ban")
    await expect(page.locator("#confirm-text")).to_contain_text("No reason is recorded.")
    await page.click("#confirm-ok")
    await expect(page.locator("#p-status")).to_have_text("banned")
    await expect(page.locator("#p-ban-reason-text")).to_have_text("none given")
    await expect(listed_reason(page, "b-lu")).to_have_text("\N{EN DASH}")  # none
    assert (await ban_reasons(http))["b-lu"] is None
    await page.click("#p-unban")
    await page.click("#confirm-ok")
    await expect(page.locator("#p-status")).to_have_text("not banned")

    # erasing asks for the player's id before it can be confirmed; cancel changes nothing
    await page.click("#p-erase")
    await expect(page.locator("#confirm-ok")).to_be_disabled()
    await page.click("#confirm-cancel")
    assert "b-lu" in await top_players(http, board_id)
    await page.click("#p-erase")
    await page.fill("#confirm-type", "b-lu")
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text("Erased b-lu")
    assert "b-lu" not in await top_players(http, board_id)


async def test_an_entry_removed_from_the_console_leaves_that_top_only(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-fix")
    other_id = new_board_id("console-fix-other")
    await put(http, f"/v1/boards/{board_id}", windows=["all-time", "weekly"])
    await put(http, f"/v1/boards/{other_id}", windows=["weekly"])
    for player, shown, points in (("f-kai", "kai_runs", 900), ("f-lu", "lu", 500)):
        await put(http, f"/v1/players/{player}", name=shown)
        await submit(http, board_id, player, points)
    await submit(http, other_id, "f-kai", 70)

    await sign_in(page, service, "#players/f-kai")
    await expect(page.locator("#p-name")).to_have_text("kai_runs")
    entries = page.locator(f'#p-entries tbody tr[data-board="{board_id}"]')
    await expect(entries).to_have_count(2)
    weekly = page.locator(f'#p-entries tbody tr[data-board="{board_id}"][data-window="weekly"]')
    period = (await weekly.locator("td").nth(2).text_content() or "").strip()
    assert re.fullmatch(r"\d{4}-W\d{2}", period), period
    remove = weekly.locator("button")
    await expect(remove).to_be_enabled()
    await expect(remove).to_have_attribute("title", re.compile(f"weekly period {period}"))

    # a confirmation first, naming the board, window and period; cancel changes nothing
    await remove.click()
    await expect(page.locator("#confirm-title")).to_have_text(
        f"Remove f-kai's entry from weekly period {period} of {board_id}?"
    )
    await expect(page.locator("#confirm-text")).to_contain_text("other windows")
    await page.click("#confirm-cancel")
    assert "f-kai" in await top_players(http, board_id, "weekly")
    await remove.click()
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text(
        f"Removed f-kai's entry from weekly period {period} of {board_id}"
    )
    # the player's entries, refreshed: that one is gone, the others stay
    await expect(weekly).to_have_count(0)
    await expect(entries).to_have_count(1)
    await expect(entries.first).to_have_attribute("data-window", "all-time")
    await expect(page.locator(f'#p-entries tbody tr[data-board="{other_id}"]')).to_have_count(1)
    # through the public reads: gone from that board's weekly top only
    deadline = time.monotonic() + 2
    while "f-kai" in await top_players(http, board_id, "weekly"):
        assert time.monotonic() < deadline, "the removed entry still shows"
        await page.wait_for_timeout(100)
    assert await top_players(http, board_id, "weekly") == ["f-lu"]
    assert await top_players(http, board_id, "all-time") == ["f-kai", "f-lu"]
    assert await top_players(http, other_id, "weekly") == ["f-kai"]

    # removed meanwhile by someone else: the API's 404 is shown, and the list refreshed
    all_time = entries.first
    gone = await http.delete(
        f"/v1/boards/{board_id}/entries/f-kai", params={"window": "all-time"}, headers=ADMIN_H
    )
    assert gone.status_code == 200, gone.text
    await all_time.locator("button").click()
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text("Could not remove the entry")
    await expect(page.locator("#toast")).to_contain_text("player_not_ranked")
    await expect(page.locator("#toast")).to_have_class(re.compile(r"\bbad\b"))
    await expect(entries).to_have_count(0)
    await expect(page.locator(f'#p-entries tbody tr[data-board="{other_id}"]')).to_have_count(1)
    assert await top_players(http, other_id, "weekly") == ["f-kai"]


async def test_a_bad_board_definition_shows_the_apis_error_on_its_field(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-new")
    await sign_in(page, service, "#boards")
    await page.click("#board-new")
    await page.fill("#f-board_id", board_id)
    await page.check('[data-field="windows"] input[value="weekly"]')
    await page.fill("#f-hold_top", "-1")
    await page.click("#editor-save")
    # the API's own words, beside the field they name
    said = await http.put(f"/v1/boards/{board_id}", json={"hold_top": -1}, headers=ADMIN_H)
    assert said.status_code == 400
    error = page.locator('[data-error-for="hold_top"]')
    await expect(error).to_have_text(f"{said.json()['error']['message']} (invalid_request)")
    await expect(page.locator("#f-hold_top")).to_be_focused()
    await shoot(page, "boards")
    # another: a sum board cannot hold runs for review
    await page.fill("#f-hold_top", "2")
    await page.select_option("#f-policy", "sum")
    await page.click("#editor-save")
    await expect(error).to_contain_text("hold_top applies to best windows only")
    await expect(page.locator('[data-error-for="policy"]')).to_be_hidden()

    # fixed, it is created; nothing was created by the refused attempts before
    await page.select_option("#f-policy", "best")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Created {board_id}")
    await expect(error).to_be_hidden()
    created = (await http.get(f"/v1/boards/{board_id}")).json()
    assert created["windows"] == ["all-time", "weekly"] and created["hold_top"] == 2
    await expect(page.locator(f'#boards tr[data-board="{board_id}"]')).to_have_count(1)

    # editing sends what changed; a field the API will not change once there are runs
    # shows its 409 on that field
    assert await submit(http, board_id, "n-one", 10) == "held"
    await page.fill("#f-grace_seconds", "60")
    await page.fill("#f-hold_top", "0")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Saved {board_id}")
    edited = (await http.get(f"/v1/boards/{board_id}")).json()
    assert edited["grace_seconds"] == 60 and edited["hold_top"] == 0, edited
    assert await submit(http, board_id, "n-two", 20) == "ranked"
    await page.select_option("#f-order", "asc")
    await page.click("#editor-save")
    await expect(page.locator('[data-error-for="order"]')).to_contain_text("board_immutable_field")
    # the periods (listed once public entries exist), an open one with its close action
    # (test_a_period_closed_from_the_console_takes_no_more_runs)
    await page.click(f'#boards tr[data-board="{board_id}"]')
    weekly = page.locator("#periods tbody tr", has_text="weekly")
    await expect(weekly.first).to_contain_text("open")
    await expect(weekly.first.locator("button")).to_be_enabled()
    await expect(weekly.first.locator("button")).to_have_text("Close now…")

    # deleting asks for the board's id first
    await page.click("#board-delete")
    await page.fill("#confirm-type", board_id)
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text(f"Deleted {board_id}")
    assert (await http.get(f"/v1/boards/{board_id}")).status_code == 404


async def test_a_windows_own_policy_is_set_from_the_board_form(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-mixed")
    await sign_in(page, service, "#boards")
    await page.click("#board-new")
    await page.fill("#f-board_id", board_id)
    for window in ("hourly", "weekly"):
        await page.check(f'[data-field="windows"] input[value="{window}"]')
    # a policy for a window the board does not have: the API's words, on that field
    await page.select_option('[data-window-policy="daily"]', value="sum")
    await page.click("#editor-save")
    error = page.locator('[data-error-for="window_policies"]')
    await expect(error).to_contain_text("not one of the board's windows (invalid_request)")
    assert (await http.get(f"/v1/boards/{board_id}")).status_code == 404
    await page.select_option('[data-window-policy="daily"]', value="")
    await page.select_option('[data-window-policy="weekly"]', value="sum")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Created {board_id}")
    await expect(error).to_be_hidden()
    created = (await http.get(f"/v1/boards/{board_id}")).json()
    assert created["windows"] == ["all-time", "hourly", "weekly"], created
    assert created["policy"] == "best" and created["window_policies"] == {"weekly": "sum"}
    await expect(page.locator(f'#boards tr[data-board="{board_id}"]')).to_contain_text(
        "weekly: sum"
    )

    # shown back in the form; the board's policy again is sent as none of its own
    await expect(page.locator('[data-window-policy="weekly"]')).to_have_value("sum")
    await expect(page.locator('[data-window-policy="all-time"]')).to_have_value("")
    await page.select_option('[data-window-policy="weekly"]', value="")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Saved {board_id}")
    assert (await http.get(f"/v1/boards/{board_id}")).json()["window_policies"] == {}
    # fixed once the board has runs, as policy is: the 409 on that field
    assert await submit(http, board_id, "m-one", 10) == "ranked"
    await page.select_option('[data-window-policy="all-time"]', value="sum")
    await page.click("#editor-save")
    await expect(error).to_contain_text("board_immutable_field")
    assert (await http.get(f"/v1/boards/{board_id}")).json()["window_policies"] == {}
    deleted = await http.delete(f"/v1/boards/{board_id}", headers=ADMIN_H)
    assert deleted.status_code == 200, deleted.text


async def period_statuses(http: httpx.AsyncClient, board_id: str, window: str) -> dict[str, str]:
    response = await http.get(f"/v1/boards/{board_id}/periods", params={"window": window})
    assert response.status_code == 200, response.text
    return {p["period"]: p["status"] for p in response.json()["periods"]}


async def test_a_period_closed_from_the_console_takes_no_more_runs(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-close")
    gone_id = new_board_id("console-close-gone")
    for board in (board_id, gone_id):
        await put(http, f"/v1/boards/{board}", windows=["all-time", "weekly"])
        await run_statuses(http, board, "k-ana", 500)
    weeks = await period_statuses(http, board_id, "weekly")
    [week] = [period for period, status in weeks.items() if status == "open"]

    await sign_in(page, service, "#boards")
    await page.click(f'#boards tr[data-board="{board_id}"]')
    row = page.locator(f'#periods tbody tr[data-window="weekly"][data-period="{week}"]')
    await expect(row).to_contain_text("open")
    close = row.locator("button")
    await expect(close).to_be_enabled()
    await expect(close).to_have_text("Close now…")
    await expect(close).to_have_attribute("title", re.compile(f"weekly period {week} of"))
    # the all-time window never closes: no action there
    await expect(page.locator('#periods tbody tr[data-window="all-time"] button')).to_have_count(0)

    # a confirmation first, naming the window, period and board; cancel changes nothing
    await close.click()
    await expect(page.locator("#confirm-title")).to_have_text(
        f"Close weekly period {week} of {board_id} now?"
    )
    await expect(page.locator("#confirm-text")).to_contain_text("answer closed in weekly")
    await page.click("#confirm-cancel")
    assert (await period_statuses(http, board_id, "weekly"))[week] == "open"
    # confirmed: "closing…" while the call runs (it answers once every instance has it)
    await close.click()
    await page.click("#confirm-ok")
    await expect(row.locator(".pill")).to_have_text("closing…")
    await expect(close).to_be_disabled()
    await expect(close).to_have_text("Closing…")
    await expect(page.locator("#toast")).to_contain_text(
        f"Closed weekly period {week} of {board_id}", timeout=15_000
    )
    # the periods, read again: that one closed, with no action left
    await expect(row.locator(".pill")).to_have_text("closed")
    await expect(row.locator("button")).to_have_count(0)
    assert (await period_statuses(http, board_id, "weekly"))[week] == "closed"
    # a run sent now answers closed in that window, and still counts all-time
    assert await run_statuses(http, board_id, "k-bo", 900) == {
        "all-time": "ranked",
        "weekly": "closed",
    }
    assert await top_players(http, board_id, "weekly") == ["k-ana"]
    assert await top_players(http, board_id, "all-time") == ["k-bo", "k-ana"]

    # refused (the board was deleted meanwhile): the API's error, and the periods read again
    await page.click(f'#boards tr[data-board="{gone_id}"]')
    other = page.locator(f'#periods tbody tr[data-window="weekly"][data-period="{week}"]')
    await expect(other.locator("button")).to_be_enabled()
    deleted = await http.delete(f"/v1/boards/{gone_id}", headers=ADMIN_H)
    assert deleted.status_code == 200, deleted.text
    await other.locator("button").click()
    await page.click("#confirm-ok")
    await expect(page.locator("#toast")).to_contain_text(f"Could not close weekly period {week}")
    await expect(page.locator("#toast")).to_contain_text("board_not_found")
    await expect(page.locator("#toast")).to_have_class(re.compile(r"\bbad\b"))
    await expect(page.locator("#periods tbody")).to_contain_text("does not exist")
    deleted = await http.delete(f"/v1/boards/{board_id}", headers=ADMIN_H)
    assert deleted.status_code == 200, deleted.text


async def deliveries(http: httpx.AsyncClient, board_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/v1/boards/{board_id}/deliveries", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["deliveries"]
    return found


async def until(check: Any, what: str, seconds: float = 30) -> Any:
    """Polls ``check()`` (a coroutine function) until it answers something truthy."""
    deadline = time.monotonic() + seconds
    while not (found := await check()):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.2)
    return found


def freeze(urls: Urls, board_id: str) -> str:
    """One pass of the season job on ``board_id`` (`rankd freeze`, as an operator runs it),
    with no settle time: what it printed."""
    env = os.environ | {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_SEASON_SETTLE_S": "0",
        "RANKD_LOG_LEVEL": "warning",
    }
    done = subprocess.run(
        [sys.executable, "-m", "rankd.cli", "freeze", "--board", board_id, "--wait", "30"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def test_a_scheduled_board_with_a_hook_is_made_from_the_form(
    service: str, page: Page, http: httpx.AsyncClient, urls: Urls
) -> None:
    board_id = new_board_id("console-sched")
    # hourly occurrences, each open for the hour, from two hours ago: one is open now
    starts = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=2)
    # the receiver answers 503 until told otherwise: the delivery stays pending
    with receiver(*[503] * 1000) as hook:
        await sign_in(page, service, "#boards")
        await page.click("#board-new")
        await page.fill("#f-board_id", board_id)
        scheduled = page.locator('[data-field="windows"] input[value="scheduled"]')
        await expect(scheduled).not_to_be_checked()
        await page.fill("#f-schedule-starts_at", starts.strftime("%Y-%m-%dT%H:%M:%SZ"))
        await expect(scheduled).to_be_checked()  # a schedule adds the scheduled window
        await page.fill("#f-hooks", hook.url)
        # a schedule the API refuses: its words, on the schedule, the field it names focused
        await page.fill("#f-schedule-every", "P2Y")
        await page.click("#editor-save")
        error = page.locator('[data-error-for="schedule"]')
        await expect(error).to_have_text(
            "schedule.every must be from PT1H to P1Y (invalid_request)"
        )
        await expect(page.locator("#f-schedule-every")).to_be_focused()
        assert (await http.get(f"/v1/boards/{board_id}")).status_code == 404
        await page.fill("#f-schedule-every", "PT1H")
        await page.click("#editor-save")
        await expect(page.locator("#toast")).to_contain_text(f"Created {board_id}")
        await expect(error).to_be_hidden()
        created = (await http.get(f"/v1/boards/{board_id}", headers=ADMIN_H)).json()
        assert created["windows"] == ["all-time", "scheduled"], created
        assert created["schedule"] == {
            "starts_at": iso(starts),
            "every": "PT1H",
            "duration": "PT1H",  # every, when none is given
            "ends_at": None,
        }
        assert created["hooks"] == {"period_closed": hook.url}
        current, following = created["current_period"], created["next_period"]
        assert current and following, created

        # the form shows it back; the panel, the open occurrence and the next
        await expect(page.locator("#f-schedule-starts_at")).to_have_value(iso(starts))
        await expect(page.locator("#f-schedule-duration")).to_have_value("PT1H")
        await expect(page.locator("#f-schedule-ends_at")).to_have_value("")
        await expect(page.locator("#f-hooks")).to_have_value(hook.url)
        await expect(page.locator("#occ-current")).to_contain_text(current["period"])
        await expect(page.locator("#occ-next")).to_contain_text(following["period"])
        row = page.locator(f'#boards tr[data-board="{board_id}"]')
        await expect(row).to_contain_text(f"open: {current['period']}")
        # the occurrences among the periods: the open one (it closes), the next upcoming
        occurrence = '#periods tbody tr[data-window="scheduled"][data-period="{}"]'.format
        now_row = page.locator(occurrence(current["period"]))
        next_row = page.locator(occurrence(following["period"]))
        await expect(now_row.locator(".pill")).to_have_text("open")
        await expect(next_row.locator(".pill")).to_have_text("upcoming")
        await expect(next_row.locator("button")).to_have_count(0)
        await expect(page.locator("#deliveries-empty")).to_be_visible()

        # a run in the open occurrence, which is closed from the console and frozen
        assert await run_statuses(http, board_id, "s-ana", 700) == {
            "all-time": "ranked",
            "scheduled": "ranked",
        }
        await now_row.locator("button").click()
        await page.click("#confirm-ok")
        await expect(page.locator("#toast")).to_contain_text(
            f"Closed scheduled period {current['period']} of {board_id}", timeout=15_000
        )

        async def frozen() -> list[dict[str, Any]]:
            await asyncio.to_thread(freeze, urls, board_id)  # again while the log catches up
            return await deliveries(http, board_id)

        [delivery] = await until(frozen, "the closed occurrence was not frozen")
        assert delivery["delivery_id"] == f"{board_id}:scheduled:{current['period']}"

        async def tried() -> bool:
            return bool((await deliveries(http, board_id))[0]["attempts"] > 0)

        await until(tried, "the service did not try the receiver")
        await page.click("#deliveries-refresh")
        listed = page.locator(f'#deliveries tbody tr[data-delivery="{delivery["delivery_id"]}"]')
        await expect(listed).to_contain_text(f"scheduled {current['period']}")
        await expect(listed.locator(".pill")).to_have_text("pending")
        await expect(listed.locator(".last-answer")).to_have_text("HTTP 503")
        await expect(listed.locator(".next-attempt")).not_to_have_text("\N{EN DASH}")
        await expect(page.locator("#deliveries-empty")).to_be_hidden()
        # the receiver answers 200 from now on: the next attempt delivers it
        hook.answers.clear()

        async def delivered() -> bool:
            return bool((await deliveries(http, board_id))[0]["status"] == "delivered")

        await until(delivered, "the retry did not deliver", seconds=60)
        await page.click("#deliveries-refresh")
        await expect(listed.locator(".pill")).to_have_text("delivered")
        await expect(listed.locator(".last-answer")).to_have_text("HTTP 200")
        await expect(listed.locator(".next-attempt")).to_contain_text("done")
        attempts = (await deliveries(http, board_id))[0]["attempts"]
        await expect(listed.locator(".num")).to_have_text(str(attempts))

    # the hook removed from the form (the log stays), and the schedule's end set: a board
    # with runs may change occurrences still to come
    await page.fill("#f-hooks", "")
    await page.fill("#f-schedule-ends_at", following["ends_at"])
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Saved {board_id}")
    edited = (await http.get(f"/v1/boards/{board_id}", headers=ADMIN_H)).json()
    assert edited["hooks"] == {}, edited
    assert edited["schedule"]["ends_at"] == following["ends_at"], edited
    assert edited["next_period"] == following
    await expect(page.locator("#f-hooks")).to_have_value("")
    await expect(page.locator("#deliveries tbody tr")).to_have_count(1)
    # but not those that have started: the 409, on the schedule
    await page.fill("#f-schedule-starts_at", iso(starts + timedelta(minutes=5)))
    await page.click("#editor-save")
    await expect(error).to_contain_text("board_immutable_field", timeout=20_000)  # loaded CI
    await expect(page.locator("#f-schedule-starts_at")).to_be_focused()
    assert (await http.get(f"/v1/boards/{board_id}")).json()["schedule"] == edited["schedule"]
    # the player's entries include the occurrence
    await page.goto(f"{service}/console#players/s-ana")
    entry = page.locator(f'#p-entries tbody tr[data-board="{board_id}"][data-window="scheduled"]')
    await expect(entry).to_contain_text(current["period"])
    await expect(page.locator(f'#p-entries tbody tr[data-board="{board_id}"]')).to_have_count(2)
    deleted = await http.delete(f"/v1/boards/{board_id}", headers=ADMIN_H)
    assert deleted.status_code == 200, deleted.text


async def test_a_hostile_player_name_is_shown_as_text(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-xss")
    await put(http, f"/v1/boards/{board_id}", hold_top=5)
    await put(http, "/v1/players/x-mal", name=HOSTILE)
    assert await submit(http, board_id, "x-mal", 1234) == "held"

    await sign_in(page, service)
    row = page.locator(f'#queue-rows tr[data-key^="{board_id}"]')
    await expect(row.locator(".name")).to_have_text(HOSTILE)
    await row.click()
    await expect(page.locator("#queue-detail h2")).to_have_text(HOSTILE)
    # a ban whose reason is markup too
    banned = await http.post("/v1/players/x-mal/ban", json={"reason": HOSTILE}, headers=ADMIN_H)
    assert banned.status_code == 200, banned.text
    await page.goto(f"{service}/console#players/x-mal")
    await expect(page.locator("#p-name")).to_have_text(HOSTILE)
    await expect(page.locator("#p-entries tbody tr", has_text=board_id)).to_have_count(1)
    await expect(page.locator("#p-ban-reason-text")).to_have_text(HOSTILE)
    await expect(listed_reason(page, "x-mal")).to_have_text(HOSTILE)
    # no element was made from it, and its handler never ran
    assert await page.locator("img").count() == 0
    assert await page.evaluate("document.body.dataset.pwned") is None
    lifted = await http.delete("/v1/players/x-mal/ban", headers=ADMIN_H)
    assert lifted.status_code == 200, lifted.text


async def test_a_league_board_is_made_and_shown_from_the_form(
    service: str, page: Page, http: httpx.AsyncClient
) -> None:
    board_id = new_board_id("console-league")
    await sign_in(page, service, "#boards")
    await page.click("#board-new")
    await page.fill("#f-board_id", board_id)
    await page.check('[data-field="windows"] input[value="weekly"]')
    await page.uncheck('[data-field="windows"] input[value="all-time"]')
    # a league the API refuses: its words, on the league's fieldset, nothing created
    await page.fill("#f-league-tiers", "bronze, silver, gold")
    await page.fill("#f-league-cohort_size", "4")
    await page.click("#editor-save")
    error = page.locator('[data-error-for="league"]')
    await expect(error).to_contain_text("league.cohort_size must be an integer in 5..1000")
    assert (await http.get(f"/v1/boards/{board_id}")).status_code == 404
    await page.fill("#f-league-cohort_size", "20")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text(f"Created {board_id}")
    created = (await http.get(f"/v1/boards/{board_id}")).json()
    assert created["league"] == {
        "window": "weekly",
        "tiers": ["bronze", "silver", "gold"],
        "cohort_size": 20,
        "promote": 5,
        "relegate": 5,
    }
    # shown back; saving unchanged sends nothing
    await expect(page.locator("#f-league-tiers")).to_have_value("bronze, silver, gold")
    await expect(page.locator("#f-league-promote")).to_have_value("5")
    await page.click("#editor-save")
    await expect(page.locator("#toast")).to_contain_text("Nothing changed.")
