"""The hot routes' fast path answers exactly what FastAPI's routes answer.

Every request below goes to two apps on the same servers, one with the fast path
(api/fastpath.py) and one without; status, body and content type must match. The requests
include what the fast path leaves to FastAPI (unusual parameters), errors of every kind,
and own views.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from rankd.api.app import create_app
from rankd.api.fastpath import PLAYER, RUNS, TOP, _route
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, Urls, make_settings, new_board_id


@contextlib.asynccontextmanager
async def plain_app(urls: Urls) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(urls, fast_routes=False))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http,
    ):
        yield http


def scope(method: str, path: str, query: bytes = b"") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "query_string": query}


def test_which_requests_take_the_fast_path() -> None:
    def route(method: str, path: str, query: bytes = b"") -> Any:
        found = _route(scope(method, path, query))
        return None if found is None else found[0]

    assert route("GET", "/v1/boards/arena/top") is TOP
    assert route("GET", "/v1/boards/arena/top", b"n=100&offset=5&window=daily") is TOP
    assert route("GET", "/v1/boards/arena/players/p1") is PLAYER
    assert route("GET", "/v1/boards/arena/players/p1", b"viewer=p1&accuracy=exact") is PLAYER
    assert route("POST", "/v1/boards/arena/runs") is RUNS
    # left to FastAPI: other routes, methods, and anything not plainly valid
    for method, path, query in [
        ("POST", "/v1/boards/arena/runs:batch", b""),
        ("GET", "/v1/boards/arena/players/p1/around", b""),
        ("HEAD", "/v1/boards/arena/top", b""),
        ("PUT", "/v1/boards/arena/top", b""),
        ("GET", "/v1/boards//top", b""),
        ("GET", "/v1/boards/arena/top", b"n=0"),
        ("GET", "/v1/boards/arena/top", b"n=1001"),
        ("GET", "/v1/boards/arena/top", b"n=+5"),
        ("GET", "/v1/boards/arena/top", b"n=%205"),
        ("GET", "/v1/boards/arena/top", b"n=5&n=6"),
        ("GET", "/v1/boards/arena/top", b"offset=-1"),
        ("GET", "/v1/boards/arena/top", b"window=daily&window=weekly"),
        ("GET", "/v1/boards/arena/players/p1", b"accuracy=fuzzy"),
        ("GET", "/v2/boards/arena/top", b""),
    ]:
        assert route(method, path, query) is None, (method, path, query)


async def test_fast_and_plain_answers_are_the_same(
    client: httpx.AsyncClient, make_board: MakeBoard, urls: Urls
) -> None:
    board = await make_board(windows=["all-time", "daily"], segments=["country"], max_run_score=900)
    missing = new_board_id("missing")
    for i in range(12):
        body = {
            "run_id": f"s{i}",
            "player_id": f"p{i}",
            "score": 10 * i,
            "segments": {"country": "FR"},
        }
        assert (
            await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        ).is_success
    reads: list[tuple[str, dict[str, Any], dict[str, str]]] = []
    for path in (f"/v1/boards/{board}/top", f"/v1/boards/{missing}/top"):
        for params in (
            {},
            {"n": "3", "offset": "2"},
            {"n": "0"},
            {"n": "abc"},
            {"n": "1001"},
            {"offset": "-3"},
            {"window": "daily", "segment": "country:FR"},
            {"window": "yearly"},
            {"segment": "country:??"},
            {"period": "9999-12-31", "window": "daily"},
            {"viewer": "p3"},
            {"n": "2", "unknown": "x"},
        ):
            reads.append((path, params, {}))
    reads.append((f"/v1/boards/{board}/top", {"viewer": "p3"}, SERVER_H))
    reads.append((f"/v1/boards/{board}/top", {"viewer": "bad id"}, SERVER_H))
    for player in ("p4", "nobody", "bad%20id"):
        for params in ({}, {"accuracy": "approx"}, {"accuracy": "fuzzy"}, {"window": "daily"}):
            reads.append((f"/v1/boards/{board}/players/{player}", params, {}))
        reads.append((f"/v1/boards/{board}/players/{player}", {"viewer": player}, SERVER_H))
    async with plain_app(urls) as plain:
        for path, params, headers in reads:
            fast = await client.get(path, params=params, headers=headers)
            slow = await plain.get(path, params=params, headers=headers)
            assert (fast.status_code, fast.json()) == (slow.status_code, slow.json()), (
                path,
                params,
            )
            assert fast.headers["content-type"] == slow.headers["content-type"]

        submits: list[tuple[Any, dict[str, str]]] = [
            ({"run_id": "x1", "player_id": "px", "score": 5}, SERVER_H),
            ({"run_id": "x1", "player_id": "px", "score": 5}, SERVER_H),  # resend
            ({"run_id": "x2", "player_id": "px", "score": 5000}, SERVER_H),
            ({"run_id": "x3", "player_id": "px", "score": -1}, SERVER_H),
            ({"run_id": "x4", "player_id": "px"}, SERVER_H),
            ({"run_id": "x5", "player_id": "px", "score": 1}, {}),
            ({"run_id": "x6", "player_id": "px", "score": 1}, ADMIN_H),
            ([1, 2], SERVER_H),
        ]
        for body, headers in submits:
            fast = await client.post(f"/v1/boards/{board}/runs", json=body, headers=headers)
            slow = await plain.post(f"/v1/boards/{board}/runs", json=body, headers=headers)
            assert fast.status_code == slow.status_code, body
            if fast.status_code == 200:
                f, s = fast.json(), slow.json()
                # the same run twice: the second sending answers as a resend
                for standing in (*f["standings"], *s["standings"]):
                    standing.pop("improved")
                    standing.pop("previous_rank")  # null the first time, the rank after
                assert f == s
            else:
                assert fast.json() == slow.json(), body
        for content, ctype in ((b"{", "application/json"), (b"{}", "text/plain")):
            headers = {**SERVER_H, "content-type": ctype}
            fast = await client.post(f"/v1/boards/{board}/runs", content=content, headers=headers)
            slow = await plain.post(f"/v1/boards/{board}/runs", content=content, headers=headers)
            assert (fast.status_code, fast.json()) == (slow.status_code, slow.json())


@pytest.mark.parametrize("fast_routes", [True, False])
async def test_metrics_label_the_route_either_way(urls: Urls, fast_routes: bool) -> None:
    app = create_app(make_settings(urls, fast_routes=fast_routes))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http,
    ):
        board = new_board_id("fp")
        await http.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
        await http.get(f"/v1/boards/{board}/top")
        text = (await http.get("/metrics")).text
    assert 'route="/v1/boards/{board_id}/top"' in text
