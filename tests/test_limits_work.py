"""Limits that count what a client costs: forwarded addresses only from trusted proxies,
runs (not requests), bounded profiles and echoes, one Authorization header, a Redis with a
memory limit."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import uvicorn

from rankd.api.app import create_app
from rankd.api.rate_limit import client_address
from rankd.api.server import ServerConfig
from rankd.embedded import free_port
from rankd.embedded.redis_server import max_memory
from rankd.runtime import Runtime
from tests.conftest import SERVER, Urls, make_settings
from tests.wire import assert_error


async def _echo_client(scope: dict[str, Any], receive: Any, send: Any) -> None:
    body = str(scope.get("client")).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def test_uvicorn_never_takes_the_client_address_from_x_forwarded_for() -> None:
    """uvicorn trusted the header from 127.0.0.1 by default, so every local request chose
    the address the rate limit counted (RANKD_RATE_TRUSTED_PROXIES=0 said it was ignored)."""
    port = free_port()
    config = ServerConfig(
        _echo_client, host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    served = uvicorn.Server(config)
    task = asyncio.create_task(served.serve())
    while not served.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.01)
    try:
        async with httpx.AsyncClient() as http:
            answer = await http.get(
                f"http://127.0.0.1:{port}/", headers={"X-Forwarded-For": "203.0.113.9"}
            )
        assert "203.0.113.9" not in answer.text
        assert "127.0.0.1" in answer.text
    finally:
        served.should_exit = True
        await task


def test_a_long_peer_is_a_bounded_identity() -> None:
    huge = "x" * 60_000
    scope = {"client": (huge, 1), "headers": [(b"x-forwarded-for", huge.encode())]}
    for trusted in (0, 1):
        assert len(client_address(scope, trusted)) < 80


async def test_a_batch_counts_each_of_its_runs_against_the_key(urls: Urls, make_board: Any) -> None:
    key = f"runs-{uuid.uuid4().hex[:10]}"
    settings = make_settings(
        urls, server_keys=[SERVER, key], rate_key_runs_per_s=1.0, rate_key_runs_burst=50
    )
    rt = Runtime.build(settings)
    await rt.open(background=False)
    app = create_app(settings)
    app.state.runtime = rt
    try:
        board = await make_board()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http:
            headers = {"Authorization": f"Bearer {key}"}
            runs = [{"run_id": f"w{i}", "player_id": f"p{i}", "score": i} for i in range(40)]
            url = f"/v1/boards/{board}/runs:batch"
            first = await http.post(url, json={"runs": runs}, headers=headers)
            assert first.status_code == 200
            # one request, but 40 more runs: over the 50-run burst
            again = await http.post(url, json={"runs": runs}, headers=headers)
            error = assert_error(again, 429, "rate_limited")
            assert "runs" in error["message"]
            assert int(again.headers["Retry-After"]) >= 1
    finally:
        await rt.close()


async def test_profiles_hold_a_bounded_number_of_dimensions(client: httpx.AsyncClient) -> None:
    segments = {f"d{i}": "x" for i in range(14_000)}
    response = await client.put(
        f"/v1/players/prof-{uuid.uuid4().hex[:8]}",
        json={"segments": segments},
        headers={"Authorization": f"Bearer {SERVER}"},
    )
    error = assert_error(response, 400, "invalid_request")
    assert "at most 16" in error["message"]


async def test_two_authorization_headers_are_refused(client: httpx.AsyncClient) -> None:
    """The route read the first, the limiter joined both (a wrong key: counted against the
    address). One rule for both: refused."""
    response = await client.get(
        "/v1/boards",
        headers=[("Authorization", f"Bearer {SERVER}"), ("Authorization", "Bearer other")],
    )
    assert_error(response, 400, "invalid_request")


async def test_error_messages_cut_echoed_input(client: httpx.AsyncClient) -> None:
    long_id = "a" * 60_000
    response = await client.get(f"/v1/boards/{long_id}/top")
    assert response.status_code in (400, 404)
    message = response.json()["error"]["message"]
    assert len(message) < 300 and long_id not in message
    response = await client.get("/v1/boards/anything/top", params={"window": "w" * 5000})
    assert len(response.text) < 400


def test_the_embedded_redis_has_a_memory_limit(monkeypatch: Any) -> None:
    assert max_memory() == "2gb"
    monkeypatch.setenv("RANKD_REDIS_MAX_MEMORY", "512MB")
    assert max_memory() == "512mb"
    monkeypatch.setenv("RANKD_REDIS_MAX_MEMORY", "lots")
    try:
        max_memory()
    except ValueError as exc:
        assert "RANKD_REDIS_MAX_MEMORY" in str(exc)
    else:
        raise AssertionError("a bad size was accepted")


async def test_redis_memory_is_watched_against_its_limit(runtime: Runtime) -> None:
    used, limit = await runtime.store.memory()
    assert limit > 0  # the embedded Redis has its maxmemory
    assert used > 0
    ratio = await runtime.check_redis_memory()
    assert 0.0 <= ratio < 1.0
