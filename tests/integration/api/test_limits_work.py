"""Limits that count what a client costs: forwarded addresses only from trusted proxies,
runs (not requests), bounded profiles and echoes, one Authorization header, a Redis with a
memory limit."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import uvicorn
from redis.asyncio import Redis, RedisCluster

from rankd.api.app import create_app
from rankd.api.rate_limit import client_address
from rankd.api.server import ServerConfig
from rankd.embedded import free_port
from rankd.embedded.redis_server import max_memory
from rankd.runtime import Runtime
from rankd.services.reads import Reader
from rankd.services.scope import resolve_scope
from rankd.stores.archive import ArchiveStore
from rankd.stores.redis import keys
from tests.support.common import SERVER, Urls, make_settings
from tests.support.durable import wait_consumer_idle
from tests.support.wire import assert_error


@pytest.fixture(autouse=True)
async def _consumer_idle_after(client: httpx.AsyncClient, runtime: Runtime) -> AsyncIterator[None]:
    """Leave the shared log consumer idle: later tests count what it applies."""
    yield
    await wait_consumer_idle(client, runtime)


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
            # more runs than the burst could never pass: refused outright, not let through
            many = [{"run_id": f"m{i}", "player_id": "p", "score": i} for i in range(60)]
            too_big = await http.post(url, json={"runs": many}, headers=headers)
            assert "at most 50" in assert_error(too_big, 400, "invalid_request")["message"]
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
    used, limit = await runtime.redis.conn.memory()
    assert limit > 0  # the embedded Redis has its maxmemory
    assert used > 0
    ratio = await runtime.check_redis_memory()
    assert 0.0 <= ratio < 1.0


async def test_every_primarys_memory_is_read(runtime: Runtime) -> None:
    """A cluster's INFO without target nodes answers for one node, as a flat dict: each
    primary must be asked (the memory watch and a resharding's room check read them)."""
    client = runtime.redis.client
    primaries = len(client.get_primaries()) if isinstance(client, RedisCluster) else 1
    nodes = await runtime.redis.conn.memory_nodes()
    assert len(nodes) == primaries, nodes
    assert all(used > 0 for used, _ in nodes), nodes


async def test_a_redis_that_would_keep_exact_times_in_hashtables_is_warned_of(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded Redis keeps hashes of up to 1,024 entries compact; a Redis of one's own
    with the default 512 gets a warning at start (a 33M-member period costs ~63 B more a
    member there)."""
    client = runtime.redis.client
    assert await runtime.health.check_redis_settings() == keys.HASH_LISTPACK_ENTRIES
    assert "hash-max-ziplist-entries" not in caplog.text
    await client.config_set("hash-max-ziplist-entries", 512)
    try:
        assert await runtime.health.check_redis_settings() == 512
    finally:
        await client.config_set("hash-max-ziplist-entries", keys.HASH_LISTPACK_ENTRIES)
    assert "hash-max-ziplist-entries is 512: a period of more than 33M members" in caplog.text


async def test_closed_period_reads_with_random_segments_ask_postgresql_once(
    runtime: Runtime, make_board: Any
) -> None:
    """Reads of closed periods naming segment values nobody has, or periods that never
    existed, missed every cache: one PostgreSQL query per read. Now: one per board window
    (and per frozen period) a second at most."""
    board_id = await make_board(windows=["all-time", "daily"], segments=["country"])
    board = await runtime.boards.get(board_id)
    archive = ArchiveStore(runtime.pg)
    queries = 0
    real_query = archive._query

    async def counted(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        nonlocal queries
        queries += 1
        return await real_query(sql, params)

    archive._query = counted  # type: ignore[method-assign]
    reader = Reader(runtime.redis.reads, runtime.names, archive=archive, archive_state_s=60.0)
    today = datetime.now(UTC).date()
    reads = 0
    for i in range(300):
        period = (today - timedelta(days=3 + i % 40)).isoformat()
        segment = f"country:{uuid.uuid4().hex[:12]}" if i % 3 else None
        scope = resolve_scope(board, "daily", period, segment)
        assert (await reader.top(scope, 10, 0))["entries"] == []
        reads += 1
    assert reads == 300
    assert queries <= 3, queries


async def test_each_segment_dimension_takes_a_bounded_number_of_values(
    urls: Urls, client: httpx.AsyncClient, runtime: Runtime, redis: Redis, make_board: Any
) -> None:
    """Every new value made keys in every window (+45 MB for 5,000 unique values); now a
    dimension takes at most RANKD_SEGMENT_VALUES_MAX values, refused with a clear 400."""
    settings = make_settings(urls, segment_values_max=3)
    rt = Runtime.build(settings)
    await rt.open(background=False)
    app = create_app(settings)
    app.state.runtime = rt
    board = await make_board(segments=["country"])
    headers = {"Authorization": f"Bearer {SERVER}"}

    def run(i: int, country: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"run_id": f"sv{i}", "player_id": f"p{i}", "score": i}
        if country is not None:
            body["segments"] = {"country": country}
        return body

    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http:
            url = f"/v1/boards/{board}/runs"
            for i, country in enumerate(("FR", "DE", "JP")):
                assert (await http.post(url, json=run(i, country), headers=headers)).is_success
            error = assert_error(
                await http.post(url, json=run(3, "US"), headers=headers), 400, "invalid_request"
            )
            assert "3 distinct values" in error["message"]
            assert (await http.post(url, json=run(4, "FR"), headers=headers)).is_success
            batch = {"runs": [run(5, "BR"), run(6, "DE"), run(7, None)]}
            results = (await http.post(f"{url}:batch", json=batch, headers=headers)).json()
            assert [r.get("error", {}).get("code") for r in results["results"]] == [
                "invalid_request",
                None,
                None,
            ]
            # a value from the player's profile counts the same
            await http.put("/v1/players/p8", json={"segments": {"country": "IT"}}, headers=headers)
            assert_error(
                await http.post(url, json=run(8, None), headers=headers), 400, "invalid_request"
            )
            # a Redis that lost the count restores it from PostgreSQL
            await wait_consumer_idle(client, runtime)
            await redis.delete(keys.segment_values(board, "country"))
            assert_error(
                await http.post(url, json=run(9, "CN"), headers=headers), 400, "invalid_request"
            )
            assert (await http.post(url, json=run(10, "JP"), headers=headers)).is_success
        assert await redis.scard(keys.segment_values(board, "country")) == 4  # 3 + marker
    finally:
        await rt.close()
