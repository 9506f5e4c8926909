"""A browser game calling Rankd from a page on another origin, in a real browser (headless
Chromium driven by Playwright) against a real `rankd serve` process started with
RANKD_CORS_ORIGINS naming the page's origin and RANKD_PLAYER_TOKEN_SECRET set.

The pages come from a static server of their own (another port on 127.0.0.1, so another
origin). The game server's side (httpx, the server and admin keys) makes a board that takes
client runs and mints a player token; the page's own `fetch` calls then read the top with no
header, submit the player's run and read the player's own entry with the token, and can read
why a request was refused (403, 429 with Retry-After: refusals carry the CORS grant too). A
client run that would enter a `hold_top` board's top is held: the player sees it, the public
does not. A shadow-banned player's token still shows them where the public top does not. A
page on an origin the service does not list is blocked by the browser itself (fetch rejects
with a TypeError), and its submit, stopped at the preflight, never reaches the service; with
`*`, any page reads and none writes. docs/game-client-example.html runs here too.

Skips only when no Chromium is installed (as tests/system/test_live_page.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.common import (
    ADMIN,
    ADMIN_H,
    SERVER,
    SERVER_H,
    TOKEN_SECRET,
    Urls,
    new_board_id,
)
from tests.support.live import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "game-client-example.html"
TS_CLIENT = ROOT / "clients" / "typescript"
# the page the fetch calls below run in: any page will do, what counts is its origin
BLANK = "<!doctype html><meta charset='utf-8'><title>a game</title><p>playing</p>\n"


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class Static:
    """A folder served over HTTP on a port of its own: one origin for pages."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        handler = functools.partial(Quiet, directory=str(folder))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


class Service:
    """`rankd serve` in a process of its own, with CORS and player tokens on."""

    def __init__(self, urls: Urls, cors_origins: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RANKD_REDIS_URL": urls.redis,
            "RANKD_POSTGRES_URL": urls.postgres,
            "RANKD_NATS_URL": urls.nats,
            "RANKD_ADMIN_KEYS": ADMIN,
            "RANKD_SERVER_KEYS": SERVER,
            "RANKD_PLAYER_TOKEN_SECRET": TOKEN_SECRET,
            "RANKD_CORS_ORIGINS": cors_origins,
            "RANKD_SEASON_JOB_INTERVAL_S": "0",
            # a page reads its own writes at once (the top list cache is covered elsewhere)
            "RANKD_TOP_CACHE_S": "0",
            "RANKD_LOG_LEVEL": "warning",
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "rankd.cli", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=self.env)
        # other tests of this worker's servers may leave log messages the new instance
        # waits on at start (redelivered with backoff): generous, and says why if not
        deadline = time.monotonic() + 120
        said = "no answer"
        while True:
            with contextlib.suppress(httpx.TransportError):
                ready = httpx.get(f"{self.base}/readyz", timeout=2)
                if ready.status_code == 200:
                    return
                said = ready.text
            assert self.process.poll() is None, "rankd serve exited"
            assert time.monotonic() < deadline, f"rankd serve did not become ready: {said}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[Static, Static]]:
    """Two origins serving the same pages: the game's (listed in RANKD_CORS_ORIGINS) and a
    stranger's (not listed)."""
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set RANKD_CHROMIUM)")
    with tempfile.TemporaryDirectory(prefix="rankd-pages-") as folder:
        (Path(folder) / "game.html").write_text(BLANK)
        shutil.copy(EXAMPLE, Path(folder) / EXAMPLE.name)
        game, stranger = Static(Path(folder)), Static(Path(folder))
        try:
            yield game, stranger
        finally:
            game.stop()
            stranger.stop()


@pytest.fixture(scope="module")
async def service(urls: Urls, sites: tuple[Static, Static]) -> AsyncIterator[Service]:
    game, _ = sites
    served = Service(urls, game.origin)
    # off the event loop, as test_live_page.py's service says why
    await asyncio.to_thread(served.start)
    try:
        yield served
    finally:
        await asyncio.to_thread(served.stop)


@pytest.fixture
async def page(sites: tuple[Static, Static]) -> AsyncIterator[Page]:
    with tempfile.TemporaryDirectory(prefix="rankd-chromium-") as profile:
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1000, "height": 800},
            )
            try:
                yield context.pages[0] if context.pages else await context.new_page()
            finally:
                await context.close()


# One fetch from the page: a token as the bearer when given, a JSON body when given. The
# answer's status, body and Retry-After (readable only when the service exposes it), or
# the error fetch rejected with (a TypeError when the browser blocks the call).
FETCH = """async ([url, method, token, body]) => {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== null) headers["Content-Type"] = "application/json";
  try {
    const response = await fetch(url, {
      method, headers, body: body === null ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : null,
      retry_after: response.headers.get("Retry-After"),
    };
  } catch (error) {
    return {error: error.name, message: error.message};
  }
}"""


async def fetch(
    page: Page, url: str, *, method: str = "GET", token: str | None = None, body: Any = None
) -> dict[str, Any]:
    answer = await page.evaluate(FETCH, [url, method, token, body])
    assert isinstance(answer, dict), answer
    return answer


def run(player: str, score: int) -> dict[str, Any]:
    return {
        "run_id": f"{player}-{score}-{time.monotonic_ns()}",
        "player_id": player,
        "score": score,
    }


async def put_board(http: httpx.AsyncClient, **config: Any) -> str:
    board_id = new_board_id("web")
    response = await http.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    return board_id


async def server_submit(http: httpx.AsyncClient, board_id: str, player: str, score: int) -> str:
    body = run(player, score)
    response = await http.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    run_id = body["run_id"]
    assert isinstance(run_id, str)
    return run_id


async def mint(http: httpx.AsyncClient, player: str, scope: list[str]) -> str:
    body = {"ttl_s": 600, "scope": scope}
    response = await http.post(f"/v1/players/{player}/tokens", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == scope
    token = response.json()["token"]
    assert isinstance(token, str)
    return token


def ids(answer: dict[str, Any]) -> list[str]:
    assert answer.get("status") == 200, answer
    return [e["player_id"] for e in answer["body"]["entries"]]


def player_id(prefix: str) -> str:
    return new_board_id(prefix)  # the same shape suits a player id; fresh for every test


async def test_a_game_page_on_another_origin(
    service: Service, sites: tuple[Static, Static], page: Page
) -> None:
    game, stranger = sites
    api = service.base
    assert game.origin != api
    ace, bob, me = player_id("ace"), player_id("bob"), player_id("me")
    async with httpx.AsyncClient(base_url=api, timeout=10) as http:
        # the game server: a board that takes client runs, two runs of its own, a token
        board = await put_board(http, client_submits=True, max_run_score=1000)
        await server_submit(http, board, ace, 900)
        await server_submit(http, board, bob, 300)
        token = await mint(http, me, ["read", "submit"])

        await page.goto(f"{game.origin}/game.html")
        assert await page.evaluate("location.origin") == game.origin

        # a public read: no header, no preflight
        top = await fetch(page, f"{api}/v1/boards/{board}/top?n=10")
        assert ids(top) == [ace, bob]
        assert top["body"]["total"] == 2
        # the player's own run, with the token (a preflighted POST with Authorization)
        submitted = await fetch(
            page, f"{api}/v1/boards/{board}/runs", method="POST", token=token, body=run(me, 400)
        )
        assert submitted["status"] == 200, submitted
        [standing] = submitted["body"]["standings"]
        assert (standing["status"], standing["rank"], standing["improved"]) == ("ranked", 2, True)
        # the player's own entry, and the same player across boards, with the token
        mine = await fetch(page, f"{api}/v1/boards/{board}/players/{me}", token=token)
        assert mine["status"] == 200, mine
        assert (mine["body"]["rank"], mine["body"]["score"], mine["body"]["total"]) == (2, 400, 3)
        across = await fetch(
            page, f"{api}/v1/players/{me}/standings?boards={board},no-such-board", token=token
        )
        assert across["status"] == 200, across
        assert [(s["board_id"], s["rank"]) for s in across["body"]["standings"]] == [(board, 2)]
        assert across["body"]["unknown_boards"] == ["no-such-board"]
        assert ids(await fetch(page, f"{api}/v1/boards/{board}/top?n=10")) == [ace, me, bob]

        # refusals reach the page readable, with their reasons
        someone_else = await fetch(
            page, f"{api}/v1/boards/{board}/runs", method="POST", token=token, body=run(bob, 999)
        )
        assert someone_else["status"] == 403, someone_else
        assert "its own player's runs" in someone_else["body"]["error"]["message"]
        too_high = await fetch(
            page, f"{api}/v1/boards/{board}/runs", method="POST", token=token, body=run(me, 5000)
        )
        assert too_high["status"] == 400, too_high
        assert too_high["body"]["error"]["code"] == "score_out_of_range"
        servers_only = await put_board(http)
        refused = await fetch(
            page,
            f"{api}/v1/boards/{servers_only}/runs",
            method="POST",
            token=token,
            body=run(me, 1),
        )
        assert refused["status"] == 403, refused
        assert "client_submits" in refused["body"]["error"]["message"]
        # a page's burst of runs meets the player's rate (1/s, burst 10): 429, Retry-After
        # readable by the page (exposed), so it can wait as long as it is told
        busy = await put_board(http, client_submits=True)
        spammer = player_id("spam")
        spam_token = await mint(http, spammer, ["submit"])
        statuses: list[int] = []
        limited: dict[str, Any] = {}
        while len(statuses) < 15 and 429 not in statuses:
            limited = await fetch(
                page,
                f"{api}/v1/boards/{busy}/runs",
                method="POST",
                token=spam_token,
                body=run(spammer, len(statuses)),
            )
            statuses.append(limited["status"])
        assert statuses[-1] == 429 and statuses.count(200) >= 10, statuses
        assert limited["body"]["error"]["code"] == "rate_limited"
        assert limited["retry_after"] is not None and int(limited["retry_after"]) >= 1, limited

        # client_submits with hold_top (docs/quick-start.md's advice): a client run that
        # would enter the top is held; the player sees it, the public does not. hold_top
        # holds any run into the top, whoever sends it: the game server's first is approved
        guarded = await put_board(http, client_submits=True, hold_top=10)
        first = await server_submit(http, guarded, ace, 50)
        approved = await http.post(f"/v1/boards/{guarded}/holds/{first}/approve", headers=ADMIN_H)
        assert approved.status_code == 200, approved.text
        held = await fetch(
            page, f"{api}/v1/boards/{guarded}/runs", method="POST", token=token, body=run(me, 70)
        )
        assert held["status"] == 200, held
        assert [(s["status"], s["rank"]) for s in held["body"]["standings"]] == [("held", 1)]
        assert ids(await fetch(page, f"{api}/v1/boards/{guarded}/top")) == [ace]
        assert ids(await fetch(page, f"{api}/v1/boards/{guarded}/top", token=token)) == [me, ace]
        holds = await http.get(f"/v1/boards/{guarded}/holds", headers=ADMIN_H)
        assert [h["player_id"] for h in holds.json()["holds"]] == [me]

        # a page on an origin not listed: the browser blocks it, the service answered a
        # plain GET but the page may not read the answer; a write stops at the preflight
        await page.goto(f"{stranger.origin}/game.html")
        assert stranger.origin != game.origin
        blocked = await fetch(page, f"{api}/v1/boards/{board}/top")
        assert blocked.get("error") == "TypeError", blocked
        newcomer = player_id("new")
        new_token = await mint(http, newcomer, ["read", "submit"])
        blocked = await fetch(
            page,
            f"{api}/v1/boards/{board}/runs",
            method="POST",
            token=new_token,
            body=run(newcomer, 500),
        )
        assert blocked.get("error") == "TypeError", blocked
        never = await http.get(f"/v1/boards/{board}/players/{newcomer}", headers=SERVER_H)
        assert never.status_code == 404, never.text  # the run never reached the service

        # a shadow-banned player: the token read still shows them, the public top does not
        await page.goto(f"{game.origin}/game.html")
        ban = await http.post(f"/v1/players/{me}/ban", headers=ADMIN_H)
        assert ban.status_code == 200, ban.text
        try:
            deadline = time.monotonic() + 5
            while me in ids(await fetch(page, f"{api}/v1/boards/{board}/top")):
                assert time.monotonic() < deadline, "the ban did not reach the public top"
                await page.wait_for_timeout(100)
            assert ids(await fetch(page, f"{api}/v1/boards/{board}/top")) == [ace, bob]
            own = await fetch(page, f"{api}/v1/boards/{board}/top", token=token)
            assert ids(own) == [ace, me, bob]
            assert own["body"]["total"] == 3  # the own view counts the viewer
            mine = await fetch(page, f"{api}/v1/boards/{board}/players/{me}", token=token)
            assert (mine["status"], mine["body"]["rank"]) == (200, 2), mine
            public = await fetch(page, f"{api}/v1/boards/{board}/players/{me}")
            assert public["status"] == 404, public
            assert public["body"]["error"]["code"] == "player_not_ranked"
            # and the banned player's page can still submit, as far as it can tell
            again = await fetch(
                page, f"{api}/v1/boards/{board}/runs", method="POST", token=token, body=run(me, 950)
            )
            assert again["status"] == 200, again
            assert [(s["status"], s["rank"]) for s in again["body"]["standings"]] == [("ranked", 1)]
            assert ids(await fetch(page, f"{api}/v1/boards/{board}/top")) == [ace, bob]
        finally:
            await http.delete(f"/v1/players/{me}/ban", headers=ADMIN_H)


async def test_the_docs_example_page(
    service: Service, sites: tuple[Static, Static], page: Page
) -> None:
    """docs/game-client-example.html, given a token as the docs say, shows the top and the
    player's rank, submits a run and shows where it landed, and shows a refusal."""
    game, _ = sites
    ace, me = player_id("ace"), player_id("me")
    async with httpx.AsyncClient(base_url=service.base, timeout=10) as http:
        board = await put_board(http, client_submits=True, max_run_score=1000)
        await server_submit(http, board, ace, 900)
        await server_submit(http, board, me, 300)
        token = await mint(http, me, ["read", "submit"])

    given = urlencode({"api": service.base, "board": board, "player": me, "token": token})
    await page.goto(f"{game.origin}/{EXAMPLE.name}#{given}")
    rows = page.locator("#top tr")
    await expect(rows).to_have_count(2)
    await expect(page.locator("#board")).to_have_text(board)
    await expect(rows.nth(0).locator(".player")).to_have_text(ace)
    await expect(page.locator("#top tr.me .rank")).to_have_text("2")
    await expect(page.locator("#me")).to_have_text("You: #2 of 2, 300")
    await expect(page.locator("#status")).to_have_text("")

    await page.fill("#score", "950")
    await page.click("#run button")
    await expect(page.locator("#status")).to_have_text("Ranked #1, a new best")
    await expect(page.locator("#me")).to_have_text("You: #1 of 2, 950")
    await expect(page.locator("#top tr.me .rank")).to_have_text("1")
    await expect(rows.nth(0).locator(".score")).to_have_text("950")

    await page.fill("#score", "5000")  # over the board's max_run_score
    await page.click("#run button")
    await expect(page.locator("#status")).to_have_class("err")
    await expect(page.locator("#status")).to_contain_text("score_out_of_range")


# a page with no bundler: the package's ES modules from the site's node_modules, named by
# an import map, as a consumer who installed the tarball would serve them
PACKAGED_PAGE = """<!doctype html><meta charset="utf-8"><title>a game</title>
<script type="importmap">
{"imports": {"@rankd/client": "./node_modules/@rankd/client/dist/index.js"}}
</script>
<script type="module">
import * as rankd from "@rankd/client";
window.rankd = rankd;
</script>
<p>playing</p>
"""

# The game's calls through the client: its own run and entry with the token, the public top
# without one, and two refusals as the client's error classes
PACKAGED_CALLS = """async ([api, board, player, token, rival]) => {
  const { RankdClient, Forbidden, BoardNotFound } = window.rankd;
  const game = new RankdClient(api, { key: token });
  const anyone = new RankdClient(api);
  const submitted = await game.submit(board, `${player}-1`, player, 400);
  const top = await anyone.top(board, { n: 10 });
  const mine = await game.player(board, player);
  const refused = await game.submit(board, `${rival}-1`, rival, 999).catch((e) => e);
  const missing = await anyone.top("no-such-board").catch((e) => e);
  return {
    standings: submitted.standings.map((s) => [s.status, s.rank]),
    top: top.entries.map((e) => e.player_id),
    rank: mine.rank,
    refused: [refused instanceof Forbidden, refused.status, refused.code],
    missing: [missing instanceof BoardNotFound, missing.status, missing.code],
  };
}"""


def unpack_client(folder: Path) -> None:
    """`npm pack` of clients/typescript (its `prepare` builds dist/), unpacked into the
    site's node_modules/@rankd/client, as `npm install` of the tarball lays it out."""
    npm = shutil.which("npm")
    if npm is None or not (TS_CLIENT / "node_modules" / "typescript").is_dir():
        pytest.skip(
            "packing the TypeScript client needs npm and its dev dependencies (make test-ts)"
        )
    with tempfile.TemporaryDirectory(prefix="rankd-pack-") as scratch:
        done = subprocess.run(
            [npm, "pack", "--silent", "--pack-destination", scratch],
            cwd=TS_CLIENT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        [tarball] = Path(scratch).glob("*.tgz")
        with tarfile.open(tarball) as packed:
            packed.extractall(scratch, filter="data")
        target = folder / "node_modules" / "@rankd" / "client"
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(Path(scratch) / "package", target)
    assert (target / "dist" / "index.js").is_file()
    assert not (target / "src").exists() and not (target / "dist" / "test").exists()


async def test_the_packaged_typescript_client_in_a_page(
    service: Service, sites: tuple[Static, Static], page: Page
) -> None:
    """The TypeScript client's tarball, served as a site without a bundler would serve it,
    imported as `@rankd/client` in a page on another origin: a player's run and reads with
    the player's token (preflighted), the public top, refusals as its error classes."""
    game, _ = sites
    unpack_client(game.folder)
    (game.folder / "packaged-client.html").write_text(PACKAGED_PAGE)
    ace, bob, me = player_id("ace"), player_id("bob"), player_id("me")
    async with httpx.AsyncClient(base_url=service.base, timeout=10) as http:
        board = await put_board(http, client_submits=True, max_run_score=1000)
        await server_submit(http, board, ace, 900)
        await server_submit(http, board, bob, 300)
        token = await mint(http, me, ["read", "submit"])

    await page.goto(f"{game.origin}/packaged-client.html")
    await page.wait_for_function("window.rankd !== undefined")
    answer = await page.evaluate(PACKAGED_CALLS, [service.base, board, me, token, bob])
    assert answer == {
        "standings": [["ranked", 2]],
        "top": [ace, me, bob],
        "rank": 2,
        "refused": [True, 403, "forbidden"],
        "missing": [True, 404, "board_not_found"],
    }


async def test_a_public_grant_reads_from_anywhere_and_writes_from_nowhere(
    urls: Urls, sites: tuple[Static, Static], page: Page
) -> None:
    """RANKD_CORS_ORIGINS=*: any page reads the public API; nothing with Authorization
    passes the preflight, so no page writes, with a token or a key."""
    _, stranger = sites
    public = Service(urls, "*")
    public.start()
    try:
        player = player_id("me")
        async with httpx.AsyncClient(base_url=public.base, timeout=10) as http:
            board = await put_board(http, client_submits=True)
            await server_submit(http, board, player_id("ace"), 10)
            token = await mint(http, player, ["read", "submit"])
        await page.goto(f"{stranger.origin}/game.html")
        api = public.base
        top = await fetch(page, f"{api}/v1/boards/{board}/top")
        assert top["status"] == 200 and top["body"]["total"] == 1, top
        for answer in (
            await fetch(page, f"{api}/v1/boards/{board}/top", token=token),
            await fetch(
                page,
                f"{api}/v1/boards/{board}/runs",
                method="POST",
                token=token,
                body=run(player, 5),
            ),
        ):
            assert answer.get("error") == "TypeError", answer
        top = await fetch(page, f"{api}/v1/boards/{board}/top")
        assert top["body"]["total"] == 1, top
    finally:
        public.stop()
