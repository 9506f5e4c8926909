"""Hostile input at the HTTP edge: strict bodies, periods the calendar cannot hold, ids no
board can have, bounded caches, unknown-board floods, clients that hang up mid-body."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from rankd.api.app import create_app
from rankd.runtime import Runtime
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, Urls, make_settings, new_board_id
from tests.support.wire import assert_error

RUN = {"run_id": "r-1", "player_id": "p1", "score": 5}


async def post_raw(
    client: httpx.AsyncClient, path: str, body: bytes, **headers: str
) -> httpx.Response:
    return await client.post(path, content=body, headers={**SERVER_H, **headers})


async def top_total(client: httpx.AsyncClient, board: str) -> int:
    return int((await client.get(f"/v1/boards/{board}/top")).json()["total"])


@pytest.mark.parametrize(
    ("content_type", "encoding"),
    [
        (None, None),
        ("text/plain", None),
        ("application/x-www-form-urlencoded", None),  # what curl -d sends
        ("application/jsonx", None),
        ("application/json", "gzip"),
    ],
)
async def test_bodies_must_be_uncompressed_json(
    client: httpx.AsyncClient, make_board: MakeBoard, content_type: str | None, encoding: str | None
) -> None:
    board = await make_board()
    body = orjson.dumps(RUN)
    headers = {}
    if content_type is not None:
        headers["content-type"] = content_type
    if encoding is not None:
        headers["content-encoding"] = encoding
        body = gzip.compress(body)
    response = await client.post(
        f"/v1/boards/{board}/runs",
        content=body,
        headers={**SERVER_H, **headers},
    )
    error = assert_error(response, 415, "unsupported_media_type")
    assert "application/json" in error["message"] or "Content-Encoding" in error["message"]
    assert await top_total(client, board) == 0


async def test_json_with_a_charset_is_fine(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    response = await post_raw(
        client,
        f"/v1/boards/{board}/runs",
        orjson.dumps(RUN),
        **{"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "body",
    [
        b'{"run_id": "r-1", "player_id": "p1", "score": 5, "score": 900}',
        b'{"runs": [], "runs": [{"run_id": "r", "player_id": "p", "score": 1}]}',
        b'{"runs": [{"run_id": "r", "player_id": "p", "player_id": "q", "score": 1}]}',
    ],
)
async def test_repeated_keys_are_refused_not_resolved(
    client: httpx.AsyncClient, make_board: MakeBoard, body: bytes
) -> None:
    board = await make_board()
    path = f"/v1/boards/{board}/runs" + (":batch" if b'"runs"' in body else "")
    response = await post_raw(client, path, body, **{"content-type": "application/json"})
    error = assert_error(response, 400, "invalid_request")
    assert "repeats the key" in error["message"]
    assert await top_total(client, board) == 0


async def test_deep_nesting_and_huge_numbers_are_400(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    for body in (
        b'{"runs": ' + b"[" * 999 + b"]" * 999 + b', "x": {"a": 1, "b": 2}}',
        b'{"run_id": "r", "player_id": "p", "score": ' + b"9" * 5000 + b"}",
    ):
        response = await post_raw(
            client, f"/v1/boards/{board}/runs", body, **{"content-type": "application/json"}
        )
        assert response.status_code in (400, 413), response.text
        assert "error" in response.json()


async def test_iso_week_dates_are_not_rfc3339(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    response = await client.post(
        f"/v1/boards/{board}/runs",
        json={**RUN, "ended_at": "2026-W48-1T10:00:00Z"},
        headers=SERVER_H,
    )
    assert "ended_at" in assert_error(response, 400, "invalid_request")["message"]


@pytest.mark.parametrize(
    ("window", "period"),
    [
        ("daily", "9999-12-31"),
        ("weekly", "9999-W52"),
        ("monthly", "9999-12"),
        ("daily", "0001-01-01"),
        ("daily", "2026-11-03\n"),
    ],
)
async def test_periods_outside_the_calendar_are_400_on_every_read(
    client: httpx.AsyncClient, make_board: MakeBoard, window: str, period: str
) -> None:
    board = await make_board(windows=["daily", "weekly", "monthly"])
    assert (await client.post(f"/v1/boards/{board}/runs", json=RUN, headers=SERVER_H)).is_success
    params = {"window": window, "period": period}
    for path in ("top", "players/p1", "players/p1/around", "players/p1/friends", "rank-of"):
        extra = {"score": "1"} if path == "rank-of" else {}
        response = await client.get(f"/v1/boards/{board}/{path}", params={**params, **extra})
        assert_error(response, 400, "invalid_request")


async def test_a_nul_in_a_board_id_is_not_found_or_invalid_never_5xx(
    client: httpx.AsyncClient,
) -> None:
    for path in ("a%00b", "a%00b/top", "a%00b/players/p1", "a%00b/periods"):
        assert_error(await client.get(f"/v1/boards/{path}"), 404, "board_not_found")
    response = await client.put("/v1/boards/a%00b", json={}, headers=ADMIN_H)
    assert "board_id" in assert_error(response, 400, "invalid_request")["message"]
    response = await client.post("/v1/boards/a%00b/runs", json=RUN, headers=SERVER_H)
    assert_error(response, 404, "board_not_found")


@pytest.fixture
async def own_app(urls: Urls) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    """An app of its own, with a long-lived top cache and a small byte bound."""
    app = create_app(make_settings(urls, top_cache_s=60.0, top_cache_bytes=100_000))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://rankd.test"
        ) as http,
    ):
        yield http, app.state.runtime


async def test_top_lists_cached_stay_within_their_byte_bound(
    own_app: tuple[httpx.AsyncClient, Runtime],
) -> None:
    http, runtime = own_app
    board = new_board_id("cache")
    assert (await http.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)).status_code == 201
    runs = [{"run_id": f"r{i}", "player_id": f"p{i}", "score": i} for i in range(300)]
    response = await http.post(
        f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
    )
    assert response.status_code == 200
    # before: each distinct (n, offset) kept a rendered body, up to 10,000 of them
    for offset in range(0, 300):
        assert (await http.get(f"/v1/boards/{board}/top?n=100&offset={offset}")).is_success
        assert runtime.reader._tops.bytes <= 100_000
    assert 0 < len(runtime.reader._tops) < 300


async def test_unknown_board_floods_ask_postgresql_once(
    own_app: tuple[httpx.AsyncClient, Runtime],
) -> None:
    http, runtime = own_app
    asked: list[str] = []
    real = runtime.pg.get_board

    async def counting(board_id: str, timeout_s: float | None = None) -> Any:
        asked.append(board_id)
        return await real(board_id, timeout_s)

    runtime.pg.get_board = counting  # type: ignore[method-assign]
    try:
        missing = f"nope-{uuid.uuid4().hex[:8]}"
        for _ in range(50):
            response = await http.get(f"/v1/boards/{missing}/top")
            assert_error(response, 404, "board_not_found")
        assert asked == [missing]
        # creating it makes it visible at once in this process
        assert (await http.put(f"/v1/boards/{missing}", json={}, headers=ADMIN_H)).is_success
        assert (await http.get(f"/v1/boards/{missing}/top")).status_code == 200
    finally:
        runtime.pg.get_board = real  # type: ignore[method-assign]


async def test_a_client_gone_mid_body_is_not_a_server_error(
    client: httpx.AsyncClient, app: Any, make_board: MakeBoard, caplog: pytest.LogCaptureFixture
) -> None:
    """The ASGI app sees http.disconnect before the body ends: no ERROR log, no 5xx."""
    board = await make_board()
    sent: list[dict[str, Any]] = []
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"run_id": "r', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"/v1/boards/{board}/runs",
        "raw_path": f"/v1/boards/{board}/runs".encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"content-type", b"application/json"),
            (b"authorization", SERVER_H["Authorization"].encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("rankd.test", 80),
        "state": {},
    }
    with caplog.at_level("INFO"):
        await app(scope, receive, send)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert all(m["status"] < 500 for m in starts), starts
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert await top_total(client, board) == 0
