"""Shared fixtures: real Redis, PostgreSQL and NATS, started once per test session.

With RANKD_TEST_REDIS_URL / RANKD_TEST_POSTGRES_URL / RANKD_TEST_NATS_URL set, those
servers are used instead. Tests isolate themselves with fresh board ids rather than flushing.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.api.app import create_app
from rankd.embedded import EmbeddedServers, start_embedded
from rankd.embedded.topology import TopologyServers, start_topology
from rankd.runtime import Runtime
from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import parse_redis_url
from tests.support.common import ADMIN_H, TOPOLOGY, MakeBoard, Urls, make_settings, new_board_id


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A data dir for embedded servers, outside pytest's tmp root: PostgreSQL runs as another
    user when we are root and must traverse its parents, which pytest keeps at 0700."""
    with tempfile.TemporaryDirectory(prefix="rankd-test-") as path:
        yield Path(path)


@pytest.fixture(scope="session")
def urls() -> Iterator[Urls]:
    env = [os.environ.get(f"RANKD_TEST_{n}_URL") for n in ("REDIS", "POSTGRES", "NATS")]
    if all(env):
        yield Urls(*env)  # type: ignore[arg-type]
        return
    with tempfile.TemporaryDirectory(prefix="rankd-test-") as path:
        servers: EmbeddedServers | TopologyServers = (
            start_embedded(Path(path))
            if TOPOLOGY == "single"
            else start_topology(Path(path), TOPOLOGY)  # type: ignore[arg-type]
        )
        try:
            yield Urls(servers.redis_url, servers.postgres_url, servers.nats_url)
        finally:
            servers.stop()


@pytest.fixture(scope="session")
async def app(urls: Urls) -> AsyncIterator[FastAPI]:
    """The service, with its lifespan entered for the whole session: the migrations are
    applied and its Runtime is open (log consumer and Redis watchdog running)."""
    app = create_app(make_settings(urls))
    async with app.router.lifespan_context(app):
        # the first test must not meet the start's own restore (profiles being restored
        # answer 503): ready means the service would take traffic
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://rankd.test"
        ) as http:
            deadline = time.monotonic() + 60
            while (await http.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, (await http.get("/readyz")).text
                await asyncio.sleep(0.05)
        yield app


@pytest.fixture(scope="session")
def runtime(app: FastAPI) -> Runtime:
    """The Runtime the session app opened."""
    rt: Runtime = app.state.runtime
    return rt


@pytest.fixture(scope="session")
def migrated(app: FastAPI) -> None:
    """For tests that use PostgreSQL directly: the schema is there (the app applied it)."""


@pytest.fixture(scope="session")
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://rankd.test"
    ) as http:
        yield http


@pytest.fixture(scope="session")
async def redis(urls: Urls) -> AsyncIterator[Redis]:
    # a cluster's or Sentinel's client where the session runs on one
    client = connect(parse_redis_url(urls.redis), max_connections=64, pool_timeout_s=10)
    yield client
    await client.aclose()


@pytest.fixture
async def make_board(client: httpx.AsyncClient) -> MakeBoard:
    async def make(**config: object) -> str:
        board_id = new_board_id()
        response = await client.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        return board_id

    return make


@pytest.fixture(params=[1, 4], ids=lambda n: f"shards{n}")
async def make_sharded_board(
    client: httpx.AsyncClient, request: pytest.FixtureRequest
) -> MakeBoard:
    """Like make_board, but each test runs twice: on an unsharded board and on one split
    over 4 shards (the answers must not differ). A module opts in by naming it make_board."""

    async def make(**config: object) -> str:
        board_id = new_board_id()
        body = {"shards": request.param, **config}
        response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        return board_id

    return make


@pytest.fixture(scope="module")
async def pg(urls: Urls) -> AsyncIterator[AsyncConnection[Any]]:
    """A plain PostgreSQL connection (autocommit) for tests that read the durable copy."""
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
async def bare_runtime(urls: Urls) -> AsyncIterator[Runtime]:
    """A second instance without consumer or watchdog (its own pools and lease
    connections), like the one `rankd replay`, `rebuild` and `freeze` open."""
    rt = Runtime.build(make_settings(urls))
    await rt.open(background=False)
    try:
        yield rt
    finally:
        await rt.close()


# Each folder is a kind of test (tests/README.md): `pytest -m unit`, `-m "not system"`, ...
KINDS = {"unit": "unit", "integration": "integration", "system": "system"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        try:
            folder = item.path.relative_to(tests).parts[0]
        except ValueError:
            continue
        if folder in KINDS:
            item.add_marker(getattr(pytest.mark, KINDS[folder]))
    # The oracle fills the session's servers with large boards; the tests that replay the
    # whole log or rebuild every board (test_admin, test_rebuild) slow down with every
    # board before them, so the oracle runs last (a stable sort keeps its modules' order).
    items.sort(key=lambda item: item.path.name == "test_oracle.py")
