"""CORS (RANKD_CORS_ORIGINS): preflights answered for the routes a browser game calls,
only the listed origins allowed, `*` for public reads only, credentials never allowed.
The browser itself is in tests/system/test_browser_client.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from rankd.api.app import create_app
from rankd.settings import Settings
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings

GAME = "https://game.example"


async def _client(urls: Urls, origins: list[str]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(urls, cors_origins=origins))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        yield http


@pytest.fixture(scope="module")
async def listed(urls: Urls) -> AsyncIterator[httpx.AsyncClient]:
    async for http in _client(urls, [GAME, "http://localhost:5173"]):
        yield http


@pytest.fixture(scope="module")
async def public(urls: Urls) -> AsyncIterator[httpx.AsyncClient]:
    async for http in _client(urls, ["*"]):
        yield http


def preflight(method: str, origin: str = GAME, headers: str = "") -> dict[str, str]:
    asked = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        asked["Access-Control-Request-Headers"] = headers
    return asked


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/boards/arena/top"),
        ("GET", "/v1/boards/arena/players/p1/friends"),
        ("POST", "/v1/boards/arena/runs"),
        ("GET", "/v1/players/p1/standings"),
        ("GET", "/v1/boards/arena/events"),
    ],
)
async def test_a_listed_origin_may_call_with_a_token(
    listed: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await listed.options(
        path, headers=preflight(method, headers="authorization,content-type")
    )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == GAME
    assert method in response.headers["access-control-allow-methods"]
    allowed = response.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed
    assert "access-control-allow-credentials" not in response.headers


async def test_other_origins_get_no_grant(listed: httpx.AsyncClient) -> None:
    refused = await listed.options(
        "/v1/boards/arena/top", headers=preflight("GET", "https://evil.example")
    )
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    read = await listed.get("/v1/boards", headers={"Origin": "https://evil.example"})
    assert read.status_code == 200  # served (CORS is the browser's check), but not granted
    assert "access-control-allow-origin" not in read.headers
    # a prefix or a path is not the origin
    for origin in (GAME + ".evil.example", GAME + "/x", "http://game.example"):
        response = await listed.get("/v1/boards", headers={"Origin": origin})
        assert "access-control-allow-origin" not in response.headers, origin


async def test_answers_and_refusals_carry_the_grant(listed: httpx.AsyncClient) -> None:
    ok = await listed.get("/v1/boards", headers={"Origin": GAME})
    assert ok.headers["access-control-allow-origin"] == GAME
    assert "origin" in ok.headers["vary"].lower()
    # a page must be able to read why it was refused
    unauthorized = await listed.put("/v1/boards/x", json={}, headers={"Origin": GAME})
    assert unauthorized.status_code == 401
    assert unauthorized.headers["access-control-allow-origin"] == GAME
    assert "retry-after" in ok.headers["access-control-expose-headers"].lower()


async def test_star_is_public_reads_only(public: httpx.AsyncClient) -> None:
    read = await public.options("/v1/boards/arena/top", headers=preflight("GET", "https://any.io"))
    assert read.status_code == 200
    assert read.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in read.headers
    for method, headers in (("POST", ""), ("PUT", ""), ("DELETE", ""), ("GET", "authorization")):
        refused = await public.options(
            "/v1/boards/arena/runs", headers=preflight(method, "https://any.io", headers)
        )
        assert refused.status_code == 400, (method, headers)
    simple = await public.get("/v1/boards", headers={"Origin": "https://any.io"})
    assert simple.headers["access-control-allow-origin"] == "*"


async def test_without_origins_no_cors_at_all(client: httpx.AsyncClient) -> None:
    response = await client.options("/v1/boards/arena/top", headers=preflight("GET"))
    assert response.status_code == 405
    assert "access-control-allow-origin" not in response.headers
    read = await client.get("/v1/boards", headers={"Origin": GAME})
    assert "access-control-allow-origin" not in read.headers
    assert ADMIN_H and SERVER_H  # the keys stay server-side: no browser test needs them here


@pytest.mark.parametrize(
    "value",
    [
        "game.example",
        "https://game.example/",
        "https://game.example/path",
        "ftp://game.example",
        "*,https://game.example",
        "https://game.example\n/x",
        "https://ga me.example",
    ],
)
def test_a_malformed_origin_is_refused_at_start(value: str) -> None:
    with pytest.raises(ValueError, match="origin"):
        Settings(cors_origins=value)


def test_origins_are_parsed_from_a_list() -> None:
    settings = Settings(cors_origins=" https://a.example , http://127.0.0.1:8080 ")
    assert settings.cors_origins == ["https://a.example", "http://127.0.0.1:8080"]
    assert Settings(cors_origins="*").cors_origins == ["*"]
    assert Settings().cors_origins == []
