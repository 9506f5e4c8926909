"""/console serves its page, script and style from the package itself (no CDN, nothing
inline), each under a Content-Security-Policy that allows this origin's files and calls only;
the script keeps to the rules the page's safety rests on (text only, the key in
sessionStorage only) and calls only routes the public API has; the ban reason field is
built, bounded as the API bounds a reason; removing one entry is built; closing a period
early is built; the board form has every window the API has, with a policy of its own, a
schedule and a webhook, and a board's panel lists its webhook deliveries and shows its
occurrences. The browser itself is in tests/system/test_console.py."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from rankd.boards import POLICIES, RETAINED
from rankd.periods import WINDOWS
from rankd.results import MAX_BAN_REASON

ROOT = Path(__file__).resolve().parents[3]
ASSETS = {
    "/console/console.js": "text/javascript; charset=utf-8",
    "/console/console.css": "text/css; charset=utf-8",
}


class Page(HTMLParser):
    """The URLs a page loads, its inline scripts and styles, and its inline handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline: list[str] = []
        self._tag: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self._tag = tag if tag in ("script", "style") and "src" not in named else None
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.urls.append(value)
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}=...>")

    def handle_data(self, data: str) -> None:
        if self._tag is not None and data.strip():
            self.inline.append(f"<{self._tag}>{data.strip()[:40]}")

    def handle_endtag(self, tag: str) -> None:
        self._tag = None


def policy(response: httpx.Response) -> dict[str, str]:
    header = response.headers["content-security-policy"]
    return {d.split()[0]: d.partition(" ")[2] for d in (p.strip() for p in header.split(";"))}


def check_policy(response: httpx.Response) -> None:
    csp = policy(response)
    assert csp["default-src"] == "'none'"
    assert csp["script-src"] == "'self'"  # no 'unsafe-inline', no other origin
    assert csp["style-src"] == "'self'"
    assert csp["connect-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'"
    assert csp["form-action"] == "'none'"
    assert "unsafe" not in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


async def test_the_page_loads_its_own_assets_under_a_policy(client: httpx.AsyncClient) -> None:
    response = await client.get("/console")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    check_policy(response)
    page = Page()
    page.feed(response.text)
    assert page.inline == [], "inline script, style or handler: the policy would refuse it"
    assert set(ASSETS) <= set(page.urls), page.urls
    for url in page.urls:
        assert url.startswith("/") and not url.startswith("//"), f"{url} is not this origin's"
        asset = await client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 100, url
    for url, media_type in ASSETS.items():
        asset = await client.get(url)
        assert asset.headers["content-type"] == media_type
        check_policy(asset)
        assert b"http://" not in asset.content and b"https://" not in asset.content, url


def script() -> str:
    return resources.files("rankd.static").joinpath("console").joinpath("console.js").read_text()


def html() -> str:
    return resources.files("rankd.static").joinpath("console").joinpath("index.html").read_text()


class Inputs(HTMLParser):
    """The attributes of each element with an id, and the table headers (by table id)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.headers: dict[str, list[str]] = {}
        self._table: str | None = None
        self._th = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if named.get("id"):
            self.by_id[str(named["id"])] = named
        if tag == "table":
            self._table = named.get("id")
        self._th = tag == "th"

    def handle_data(self, data: str) -> None:
        if self._th and self._table and data.strip():
            self.headers.setdefault(self._table, []).append(data.strip())

    def handle_endtag(self, tag: str) -> None:
        self._th = False
        if tag == "table":
            self._table = None


def test_the_ban_reason_field_is_built() -> None:
    """The players view's reason field is enabled (no longer "not built yet"), takes at most
    what the API takes, and the list of bans has a column for the reasons."""
    page = Inputs()
    page.feed(html())
    reason = page.by_id["p-reason"]
    assert "disabled" not in reason, reason
    assert "not built" not in (reason.get("placeholder") or "")
    assert reason.get("maxlength") == str(MAX_BAN_REASON)
    assert page.headers["bans"] == ["Player", "Banned at", "Reason"]
    assert "p-ban-reason-text" in page.by_id


def test_removing_an_entry_is_built() -> None:
    """Each entry of the players view removes that entry (DELETE .../entries/{player} with
    its window and period), no longer shown as "not built yet"."""
    assert re.search(r"`/v1/boards/\$\{[^}]+\}/entries/\$\{[^}]+\}\?", script())
    assert "not built yet: DELETE /v1/boards/{id}/entries" not in script()
    assert not re.search(r"entries/\{player\}</code>\) is not built", html())


def test_closing_a_period_is_built() -> None:
    """Each open period of the boards view closes (POST .../periods/{period}/close with its
    window), no longer shown as "not built yet", behind a confirmation."""
    assert re.search(r"`/v1/boards/\$\{[^}]+\}/periods/\$\{[^}]+\}/close\?", script())
    assert "not built yet: POST /v1/boards/{id}/periods" not in script()
    assert "is not built yet" not in html()
    assert re.search(r"confirmAction\(\{ title: `Close ", script())


def test_the_board_form_has_every_window_and_its_own_policy() -> None:
    """A windows checkbox and a policy select (the board's, or one of the API's policies) for
    each window the API has, and a retention for each window one may be set for."""
    page = html()
    assert sorted(re.findall(r'<input type="checkbox" value="([^"]+)">', page)) == sorted(WINDOWS)
    selects = re.findall(r'<select data-window-policy="([^"]+)">(.*?)</select>', page)
    assert sorted(w for w, _ in selects) == sorted(WINDOWS)
    for window, options in selects:
        assert options.startswith('<option value="">board\'s</option>'), window  # none: {}
        # the rolling window keeps best entries only (the API refuses any other there)
        policies = ["best"] if window == "rolling-7d" else list(POLICIES)
        assert re.findall(r"<option>([^<]*)</option>", options) == policies, window
    assert set(re.findall(r'data-retention="([^"]+)"', page)) == set(RETAINED)


def test_the_board_form_has_a_schedule_a_hook_and_the_delivery_log() -> None:
    """The schedule's four fields (each an input of the schedule fieldset, sent as the
    board's `schedule`), the hook's URL input, the delivery log of a board's panel
    (GET .../deliveries) with its status, attempts, last answer and next attempt, and the
    board's open and next occurrence. One hook input: period_closed is the one event."""
    page = html()
    assert re.findall(r'data-schedule="([^"]+)"', page) == [
        "starts_at",
        "every",
        "duration",
        "ends_at",
    ]
    assert re.search(r'<fieldset class="field" data-field="schedule">', page)
    parsed = Inputs()
    parsed.feed(page)
    hook = parsed.by_id["f-hooks"]
    assert hook.get("data-field") == "hooks" and hook.get("maxlength") == "2048", hook
    assert parsed.headers["deliveries"] == [
        "Period",
        "Status",
        "Attempts",
        "Last answer",
        "Next attempt",
    ]
    assert {"occ-current", "occ-next", "deliveries-refresh"} <= set(parsed.by_id)
    assert re.search(r"`/v1/boards/\$\{[^}]+\}/deliveries\?", script())
    for field in ("hooks", "schedule"):
        assert f'"{field}"' in script()  # among the fields an API error may name


@pytest.mark.parametrize(
    "banned",
    ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "localStorage",
     "document.cookie", "new Function"],
)  # fmt: skip
def test_the_script_renders_text_and_keeps_the_key_in_the_tab(banned: str) -> None:
    assert banned not in script()


def test_the_script_calls_only_public_routes(app: FastAPI) -> None:
    """Every /v1 path the script builds is a route of the public API, as its OpenAPI
    document lists them: no private route, so the console and the API cannot disagree."""
    called = {
        re.sub(r"\$\{[^}]*\}", "X", path).partition("?")[0]
        for path in re.findall(r"[`\"](/v1/[^`\"]*)[`\"]", script())
    }
    assert len(called) >= 10, called
    documented = [p.split("/") for p in app.openapi()["paths"]]
    for path in called:
        parts = path.split("/")
        assert any(
            len(parts) == len(route)
            and all(
                c == "X" or r.startswith("{") or c == r for c, r in zip(parts, route, strict=True)
            )
            for route in documented
        ), f"{path} is not a documented route"


def test_the_package_ships_every_console_file() -> None:
    """pyproject.toml's package data names each file under rankd/static/console/."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["rankd"]
    folder = ROOT / "src" / "rankd" / "static" / "console"
    files = sorted(p.relative_to(ROOT / "src" / "rankd").as_posix() for p in folder.iterdir())
    assert {"static/console/index.html", "static/console/console.js"} <= set(files)
    for name in files:
        assert any(fnmatch.fnmatch(name, p) for p in patterns), f"{name} is not packaged"
