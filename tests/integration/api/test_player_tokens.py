"""Player tokens (v1.3) against the session app: minted by a server key, read as the
player's own view, submit the player's own runs on client_submits boards only, and every
fault (expired, altered, unknown secret, wrong player, missing scope) refused.

The session app signs with TOKEN_SECRET and also accepts TOKEN_SECRET_OLD (rotation).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest

from rankd.api.app import create_app
from tests.support.common import (
    ADMIN_H,
    SERVER_H,
    TOKEN_SECRET,
    TOKEN_SECRET_OLD,
    MakeBoard,
    Urls,
    make_settings,
    new_board_id,
)


async def mint(client: httpx.AsyncClient, player: str, **body: Any) -> dict[str, str]:
    response = await client.post(f"/v1/players/{player}/tokens", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['token']}"}


def signed(secret: str = TOKEN_SECRET, /, **claims: Any) -> dict[str, str]:
    """A token minted the way a game server may mint its own."""
    token = jwt.encode(claims, secret, algorithm="HS256")
    return {"Authorization": f"Bearer {token}"}


def player_id() -> str:
    return new_board_id("tok").replace(".", "-")


async def submit(
    client: httpx.AsyncClient, board: str, player: str, score: int, headers: dict[str, str]
) -> httpx.Response:
    run = {"run_id": new_board_id("r"), "player_id": player, "score": score}
    return await client.post(f"/v1/boards/{board}/runs", json=run, headers=headers)


async def test_a_minted_token_is_a_jwt_with_the_asked_claims(client: httpx.AsyncClient) -> None:
    player = player_id()
    before = int(time.time())
    response = await client.post(
        f"/v1/players/{player}/tokens",
        json={"ttl_s": 600, "scope": ["submit", "read"]},
        headers=SERVER_H,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    claims = jwt.decode(body["token"], TOKEN_SECRET, algorithms=["HS256"])
    assert claims["sub"] == player
    assert claims["scope"] == "read submit"
    assert before + 600 <= claims["exp"] <= int(time.time()) + 600
    assert body["scope"] == ["read", "submit"]
    assert body["expires_at"].endswith(".000Z")
    # defaults: an hour, read only
    default = jwt.decode(
        (await mint(client, player))["Authorization"].split()[1],
        TOKEN_SECRET,
        algorithms=["HS256"],
    )
    assert default["scope"] == "read" and 3500 < default["exp"] - time.time() <= 3600


@pytest.mark.parametrize(
    "body",
    [
        {"ttl_s": 59},
        {"ttl_s": 7 * 86_400 + 1},
        {"ttl_s": "60"},
        {"ttl_s": True},
        {"scope": []},
        {"scope": ["admin"]},
        {"scope": ["read", "read"]},
        {"scope": "read"},
        {"ttl_s": 60, "sub": "someone-else"},
        [],
    ],
)
async def test_a_bad_mint_request_is_400(client: httpx.AsyncClient, body: Any) -> None:
    response = await client.post("/v1/players/p1/tokens", json=body, headers=SERVER_H)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_request"


async def test_minting_needs_a_server_key(client: httpx.AsyncClient) -> None:
    assert (await client.post("/v1/players/p1/tokens", json={})).status_code == 401
    token = await mint(client, "p1")
    refused = await client.post("/v1/players/p1/tokens", json={}, headers=token)
    assert refused.status_code == 403
    bad_id = await client.post("/v1/players/bad%20id/tokens", json={}, headers=SERVER_H)
    assert bad_id.status_code == 400


async def test_a_token_reads_as_its_players_own_view(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    banned, other = player_id(), player_id()
    assert (await submit(client, board, banned, 50, SERVER_H)).status_code == 200
    assert (await submit(client, board, other, 10, SERVER_H)).status_code == 200
    ban = await client.post(f"/v1/players/{banned}/ban", headers=ADMIN_H)
    assert ban.status_code == 200
    token = await mint(client, banned)

    async def top(headers: dict[str, str] | None = None, **params: str) -> list[str]:
        response = await client.get(f"/v1/boards/{board}/top", params=params, headers=headers)
        assert response.status_code == 200, response.text
        return [e["player_id"] for e in response.json()["entries"]]

    deadline = time.monotonic() + 2
    while banned in await top():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert await top() == [other]
    # shadow-banned: the player still sees themselves, where they would stand
    assert await top(token) == [banned, other]
    assert await top(token, viewer=banned) == [banned, other]
    mine = await client.get(f"/v1/boards/{board}/players/{banned}", headers=token)
    assert mine.status_code == 200 and mine.json()["rank"] == 1
    public = await client.get(f"/v1/boards/{board}/players/{banned}")
    assert public.status_code == 404
    around = await client.get(f"/v1/boards/{board}/players/{banned}/around", headers=token)
    assert [e["player_id"] for e in around.json()["entries"]] == [banned, other]
    # a token reads no one else's own view
    other_view = await client.get(
        f"/v1/boards/{board}/top", params={"viewer": other}, headers=token
    )
    assert other_view.status_code == 403
    # without the read scope it reads nothing
    submit_only = await mint(client, banned, scope=["submit"])
    refused = await client.get(f"/v1/boards/{board}/top", headers=submit_only)
    assert refused.status_code == 403
    assert "read" in refused.json()["error"]["message"]


async def test_client_submits_only_on_boards_that_take_them(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    servers_only = await make_board()
    board = await make_board(client_submits=True, max_run_score=1000)
    player = player_id()
    token = await mint(client, player, scope=["read", "submit"])

    refused = await submit(client, servers_only, player, 5, token)
    assert refused.status_code == 403, refused.text
    assert "client_submits" in refused.json()["error"]["message"]
    accepted = await submit(client, board, player, 5, token)
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["standings"][0]["rank"] == 1
    # the same checks as a server's run
    too_high = await submit(client, board, player, 5000, token)
    assert too_high.status_code == 400
    assert too_high.json()["error"]["code"] == "score_out_of_range"
    # another player's run, a batch, no submit scope: refused, nothing stored
    assert (await submit(client, board, player_id(), 5, token)).status_code == 403
    batch = {"runs": [{"run_id": "b-1", "player_id": player, "score": 9}]}
    as_batch = await client.post(f"/v1/boards/{board}/runs:batch", json=batch, headers=token)
    assert as_batch.status_code == 403
    read_only = await mint(client, player)
    assert (await submit(client, board, player, 7, read_only)).status_code == 403
    top = await client.get(f"/v1/boards/{board}/top")
    assert [(e["player_id"], e["score"]) for e in top.json()["entries"]] == [(player, 5)]
    # the board setting is shown and can be turned off again
    shown = await client.get(f"/v1/boards/{board}")
    assert shown.json()["client_submits"] is True
    off = await client.put(f"/v1/boards/{board}", json={"client_submits": False}, headers=ADMIN_H)
    assert off.status_code == 200 and off.json()["client_submits"] is False
    assert (await submit(client, board, player, 6, token)).status_code == 403
    bad = await client.put(f"/v1/boards/{board}", json={"client_submits": 1}, headers=ADMIN_H)
    assert bad.status_code == 400


async def test_a_players_own_runs_are_rate_limited(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board(client_submits=True)
    player = player_id()
    token = await mint(client, player, scope=["submit"])
    statuses = [(await submit(client, board, player, i, token)).status_code for i in range(14)]
    # burst 10 at 1 run/s (RANKD_RATE_PLAYER_RUNS_*): the rest of the 14 are refused
    assert statuses.count(200) in (10, 11), statuses
    assert statuses[-1] == 429, statuses
    limited = await submit(client, board, player, 99, token)
    assert int(limited.headers["retry-after"]) >= 1
    # another player on the same board is not slowed
    friend = player_id()
    friend_token = await mint(client, friend, scope=["submit"])
    assert (await submit(client, board, friend, 1, friend_token)).status_code == 200
    # a game server submitting for the player is not counted against the player
    assert (await submit(client, board, player, 100, SERVER_H)).status_code == 200


@pytest.mark.parametrize(
    "case",
    ["expired", "altered", "unknown-secret", "alg-none", "no-exp", "no-sub", "far-exp", "bad-sub"],
)
async def test_a_bad_token_is_401_and_never_echoed(client: httpx.AsyncClient, case: str) -> None:
    now = int(time.time())
    good: dict[str, Any] = {"sub": "p1", "scope": "read", "exp": now + 600}
    headers = {
        "expired": signed(**{**good, "exp": now - 120}),  # past the 30 s leeway
        "unknown-secret": signed("x" * 40, **good),
        "no-exp": signed(sub="p1", scope="read"),
        "no-sub": signed(scope="read", exp=now + 600),
        "far-exp": signed(**{**good, "exp": now + 30 * 86_400}),
        "bad-sub": signed(**{**good, "sub": "not a player"}),
    }.get(case)
    if case == "altered":
        token = signed(**good)["Authorization"].split()[1]
        head, payload, signature = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
        forged = base64.urlsafe_b64encode(json.dumps({**claims, "sub": "p2"}).encode())
        headers = {"Authorization": f"Bearer {head}.{forged.decode().rstrip('=')}.{signature}"}
    if case == "alg-none":
        token = jwt.encode(good, None, algorithm="none")
        headers = {"Authorization": f"Bearer {token}"}
    assert headers is not None
    for response in (
        await client.get("/v1/boards/none-such/top", headers=headers),
        await client.get("/v1/players/p1/standings", params={"boards": "x"}, headers=headers),
    ):
        assert response.status_code == 401, (case, response.text)
        assert response.json()["error"]["code"] == "unauthorized"
        assert headers["Authorization"].split()[1] not in response.text


async def test_rotation_an_old_secret_still_verifies(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board = await make_board()
    exp = int(time.time()) + 600
    old = signed(TOKEN_SECRET_OLD, sub="p1", scope="read", exp=exp)
    assert (await client.get(f"/v1/boards/{board}/top", headers=old)).status_code == 200
    # within the leeway, a just-expired token still works (clocks differ)
    late = signed(sub="p1", scope="read", exp=int(time.time()) - 5)
    assert (await client.get(f"/v1/boards/{board}/top", headers=late)).status_code == 200


async def test_a_token_never_reaches_a_key_route(client: httpx.AsyncClient) -> None:
    token = await mint(client, "p1", scope=["read", "submit", "join"])
    board = new_board_id()
    routes = [
        ("PUT", f"/v1/boards/{board}", {}),
        ("PUT", "/v1/players/p1", {"name": "x"}),
        ("GET", "/v1/players/p1", None),
        ("POST", "/v1/players/p1/ban", None),
        ("GET", "/v1/bans", None),
        ("DELETE", "/v1/players/p1", None),
        ("GET", f"/v1/boards/{board}/holds", None),
    ]
    for method, path, body in routes:
        response = await client.request(method, path, json=body, headers=token)
        assert response.status_code == 403, (method, path, response.text)
    # and nothing was made
    assert (await client.get(f"/v1/boards/{board}")).status_code == 404


async def test_a_wrong_key_on_a_public_read_is_401(client: httpx.AsyncClient) -> None:
    wrong = {"Authorization": "Bearer not-a-key"}
    response = await client.get("/v1/boards", headers=wrong)
    assert response.status_code == 200  # the board list asks no credentials at all
    top = await client.get("/v1/boards/none-such/top", headers=wrong)
    assert top.status_code == 401


@pytest.fixture(scope="module")
async def untokened(urls: Urls) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(urls, player_token_secret=[]))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        yield http


async def test_without_a_secret_tokens_are_off(untokened: httpx.AsyncClient) -> None:
    response = await untokened.post("/v1/players/p1/tokens", json={}, headers=SERVER_H)
    assert response.status_code == 501
    assert "RANKD_PLAYER_TOKEN_SECRET" in response.json()["error"]["message"]
    token = signed(sub="p1", scope="read", exp=int(time.time()) + 60)
    assert (await untokened.get("/v1/boards/x/top", headers=token)).status_code == 401
