"""The access log (one line per request, RANKD_ACCESS_LOG) and what the metrics count."""

from __future__ import annotations

import logging
import re

import httpx
import pytest
from prometheus_client import REGISTRY
from starlette.types import Receive, Scope, Send

from rankd.api.app import RequestMetrics, create_app
from rankd.settings import Settings
from tests.support.common import SERVER_H, MakeBoard, new_board_id

LINE = re.compile(r"(GET|PUT|POST) (/\S*) (\d{3}) (\d+\.\d)ms")


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "rankd.access"]


async def test_each_request_logs_method_path_status_and_ms(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    missing = new_board_id("log")
    with caplog.at_level(logging.INFO, logger="rankd.access"):
        await client.get(f"/v1/boards/{missing}/top", params={"n": 3, "segment": "country:secret"})
        await client.get("/healthz")
    lines = access_lines(caplog)
    assert len(lines) == 2, lines
    first = LINE.fullmatch(lines[0])
    assert first is not None, lines[0]
    assert first.groups()[:3] == ("GET", f"/v1/boards/{missing}/top", "404")
    assert "secret" not in lines[0]  # no query strings in the log
    assert LINE.fullmatch(lines[1]) and " 200 " in lines[1]


async def plain(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def call(app: RequestMetrics) -> None:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    async def send(_: object) -> None:
        return None

    scope = {"type": "http", "method": "PUT", "path": "/v1/players/p1", "headers": []}
    await app(scope, receive, send)


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_access_log_can_be_turned_off(
    enabled: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="rankd.access"):
        await call(RequestMetrics(plain, log_requests=enabled))
    lines = access_lines(caplog)
    assert len(lines) == (1 if enabled else 0)
    if enabled:
        match = LINE.fullmatch(lines[0])
        assert match is not None and match.groups()[:3] == ("PUT", "/v1/players/p1", "204")


def test_rankd_access_log_false_reaches_the_middleware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANKD_ACCESS_LOG", "false")
    settings = Settings()
    assert settings.access_log is False
    app = create_app(settings)
    # Starlette types Middleware.cls as a generic protocol mypy does not match to a class
    [middleware] = [
        m
        for m in app.user_middleware
        if m.cls is RequestMetrics  # type: ignore[comparison-overlap]
    ]
    assert middleware.kwargs == {"log_requests": False}
    assert Settings(access_log=True).access_log is True


async def test_runs_accepted_counts_resends_as_its_help_says(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    labels = {"endpoint": "single"}
    before = REGISTRY.get_sample_value("rankd_runs_accepted_total", labels) or 0.0
    run = {"run_id": "r-1", "player_id": "p1", "score": 5}
    for _ in range(2):
        response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert response.status_code == 200
    assert REGISTRY.get_sample_value("rankd_runs_accepted_total", labels) == before + 2
    text = (await client.get("/metrics")).text
    [help_line] = [
        h for h in text.splitlines() if h.startswith("# HELP rankd_runs_accepted_total ")
    ]
    assert "resend" in help_line and "applied" not in help_line
