"""The per-process top-list cache: reused within top_cache_s, fresh after it."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rankd.api.app import create_app
from rankd.runtime import Runtime
from rankd.services.invalidation import Invalidations
from rankd.services.scope import resolve_scope
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings


@contextlib.asynccontextmanager
async def cached_service(
    urls: Urls, top_cache_s: float, **config: object
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, str]]:
    """An app of its own with this top-list cache, a client, and a new board's id (made
    with ``config``)."""
    app = create_app(make_settings(urls, top_cache_s=top_cache_s))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http,
    ):
        board = f"tc-{uuid.uuid4().hex[:8]}"
        created = await http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
        assert created.status_code == 201, created.text
        yield app, http, board


async def submit(http: httpx.AsyncClient, board: str, player: str, score: int) -> None:
    body = {"run_id": player, "player_id": player, "score": score}
    response = await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200


async def test_top_lists_are_reused_briefly_then_refreshed(urls: Urls) -> None:
    # 2 s: a submit and a read fit within it on a loaded machine too
    async with cached_service(urls, 2.0) as (_, http, board):

        async def top_total() -> int:
            return int((await http.get(f"/v1/boards/{board}/top")).json()["total"])

        await submit(http, board, "a", 1)
        assert await top_total() == 1
        await submit(http, board, "b", 2)
        assert await top_total() == 1  # the rendered list is reused...
        players = (await http.get(f"/v1/boards/{board}/players/b")).json()
        assert players["rank"] == 1  # ...but a player's own reads are never cached
        await asyncio.sleep(2.1)
        assert await top_total() == 2  # ...and refreshed after top_cache_s


async def test_a_ban_is_not_hidden_behind_this_process_s_cached_top(urls: Urls) -> None:
    async with cached_service(urls, 5.0) as (_, http, board):
        player = f"cached-{uuid.uuid4().hex[:8]}"
        body = {"run_id": "r1", "player_id": player, "score": 5}
        assert (await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)).is_success
        assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 1  # now cached
        assert (await http.post(f"/v1/players/{player}/ban", headers=ADMIN_H)).is_success
        try:
            assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 0
        finally:
            await http.delete(f"/v1/players/{player}/ban", headers=ADMIN_H)
        assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 1


async def test_a_hold_decision_and_an_erasure_reach_this_process_s_cached_top(urls: Urls) -> None:
    async with cached_service(urls, 5.0, hold_top=1) as (_, http, board):
        player = f"held-{uuid.uuid4().hex[:8]}"
        body = {"run_id": "r1", "player_id": player, "score": 5}
        assert (await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)).is_success
        assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 0  # now cached
        approved = await http.post(f"/v1/boards/{board}/holds/r1/approve", headers=ADMIN_H)
        assert approved.is_success
        assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 1
        assert (await http.delete(f"/v1/players/{player}", headers=ADMIN_H)).is_success
        assert (await http.get(f"/v1/boards/{board}/top")).json()["total"] == 0


def test_a_failing_listener_does_not_keep_the_others_from_hearing() -> None:
    heard: list[str] = []
    hub = Invalidations()

    def broken() -> None:
        raise RuntimeError("boom")

    hub.subscribe(broken)
    hub.subscribe(lambda: heard.append("reader"))
    hub.publish()
    assert heard == ["reader"]


async def test_a_list_read_while_a_change_landed_counts_as_read_before_it(
    urls: Urls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live stream told of a change asks for a list no older than the notice. A list whose
    read began before the change landed and ended after the notice was cached as new, so
    the stream took it (without the change) and waited for the next notice. Cached lists
    now count their age from when their read began."""
    async with cached_service(urls, 5.0) as (app, http, board):
        await submit(http, board, "early", 1)
        rt: Runtime = app.state.runtime
        scope = resolve_scope(await rt.boards.get(board), None, None)
        ask, replied, go_on = rt.reader._ask, asyncio.Event(), asyncio.Event()

        async def read_then_wait(*args: Any, **kwargs: Any) -> Any:
            answer = await ask(*args, **kwargs)  # Redis has answered...
            replied.set()
            await go_on.wait()  # ...and the list is cached only later
            return answer

        monkeypatch.setattr(rt.reader, "_ask", read_then_wait)
        slow = asyncio.create_task(rt.reader.top(scope, 10, 0))
        await replied.wait()
        monkeypatch.undo()
        await submit(http, board, "late", 2)  # lands after that read
        noticed = time.monotonic()  # a stream's notice of it, at the earliest
        go_on.set()
        assert (await slow)["total"] == 1
        fresh = await rt.reader.top(scope, 10, 0, max_age_s=time.monotonic() - noticed)
        assert fresh["total"] == 2
