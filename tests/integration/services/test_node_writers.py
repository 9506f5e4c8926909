"""Stray writes to a replaced primary caught up from PostgreSQL's record of who wrote where
(services/node_writers.py): an instance restarted during a partition forgot that its
consumer acked runs on the old primary; any instance replays them into the current one.

The old primary here is a node id with a restore's note (where the restore replacing it
began, as services/rebuild/restart.py writes it) and a run's entry removed from the
current Redis: what the current primary lacks when only the old one took a batch."""

from __future__ import annotations

import time

import httpx
import pytest
from redis.asyncio import Redis

from rankd.runtime import Runtime
from rankd.services.node_writers import NodeWriters
from rankd.stores.postgres import NOW_MS
from rankd.stores.redis import keys
from rankd.stores.redis.connection import identity
from tests.support.common import ADMIN_H, SERVER_H, new_board_id, zmembers
from tests.support.durable import wait_consumer_idle


async def submit(client: httpx.AsyncClient, board: str, run: str, player: str, score: int) -> None:
    body = {"run_id": run, "player_id": player, "score": score}
    sent = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert sent.status_code == 200, sent.text


async def top(client: httpx.AsyncClient, board: str) -> list[tuple[str, int]]:
    got = await client.get(f"/v1/boards/{board}/top")
    assert got.status_code == 200, got.text
    return [(e["player_id"], e["score"]) for e in got.json()["entries"]]


async def test_a_quiet_replaced_node_is_caught_up_once_by_any_instance(
    client: httpx.AsyncClient, runtime: Runtime, redis: Redis
) -> None:
    board = new_board_id("writers")
    response = await client.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    await submit(client, board, "r1", "pA", 10)
    await wait_consumer_idle(client, runtime)
    restore_began = await runtime.runlog.last_sequence() + 1
    await submit(client, board, "r2", "pB", 20)
    await wait_consumer_idle(client, runtime)
    # what only the old primary took: pB's entry is not in the current one
    key = keys.period_keys(board, "all-time", "all-time").public
    members = [m for m in zmembers(await redis.zrange(key, 0, -1)) if m[7:] == b"pB"]
    assert len(members) == 1 and await redis.zrem(key, *members) == 1
    assert await top(client, board) == [("pA", 10)]

    now_ms = int(time.time() * 1000)
    await runtime.redis.positions.mark_restored_from("old-node", restore_began, now_ms - 60_000)
    await note_at(runtime, "old-node", -60_000)
    await note_at(runtime, "noteless-node", -60_000)  # no restore replaced it
    await note_at(runtime, "busy-node", 0)  # still written to: left alone
    current = await identity(runtime.redis.client)
    caught: list[str] = []

    async def catch_up(node: str) -> None:
        caught.append(node)
        await runtime.restorer.catch_up(node, lambda _: None)

    writers = NodeWriters(runtime.pg, runtime.restorer, quiet_s=30.0)
    assert await writers.round(current, catch_up) == 1
    assert caught == ["old-node"]
    assert await top(client, board) == [("pB", 20), ("pA", 10)]
    # both quiet notes are gone (one caught up, one with nothing to replay from); the
    # current node is noted, the busy one kept
    assert await notes(runtime) >= {current, "busy-node"}
    assert not await notes(runtime) & {"old-node", "noteless-node"}
    # not again: the next round (due at once here) finds nothing quiet
    writers._next = 0.0
    assert await writers.round(current, catch_up) == 0 and caught == ["old-node"]
    async with runtime.pg.connection() as conn:  # leave no note behind for other tests
        await conn.execute("DELETE FROM redis_writers WHERE node = 'busy-node'")


async def note_at(runtime: Runtime, node: str, offset_ms: int) -> None:
    """A note as of ``offset_ms`` from now (PostgreSQL's clock)."""
    async with runtime.pg.connection() as conn:
        await conn.execute(
            f"INSERT INTO redis_writers VALUES (%s, {NOW_MS} + %s)"
            " ON CONFLICT (node) DO UPDATE SET noted_ms = excluded.noted_ms",
            (node, offset_ms),
        )


async def notes(runtime: Runtime) -> set[str]:
    async with runtime.pg.connection() as conn:
        cur = await conn.execute("SELECT node FROM redis_writers")
        return {str(r[0]) for r in await cur.fetchall()}


async def test_a_failed_catch_up_keeps_the_note_and_waits_longer_each_time(
    runtime: Runtime,
) -> None:
    now_ms = int(time.time() * 1000)
    await runtime.redis.positions.mark_restored_from("failing-node", 1, now_ms)
    await note_at(runtime, "failing-node", -60_000)
    current = await identity(runtime.redis.client)

    async def catch_up(node: str) -> None:
        raise RuntimeError("the log cannot be read")

    writers = NodeWriters(runtime.pg, runtime.restorer, quiet_s=30.0)
    waits = []
    for _ in range(3):
        writers._next = 0.0
        with pytest.raises(RuntimeError):
            await writers.round(current, catch_up)
        waits.append(writers._next - time.monotonic())
    assert "failing-node" in await notes(runtime)
    assert waits[0] < waits[1] < waits[2], waits
    async with runtime.pg.connection() as conn:
        await conn.execute("DELETE FROM redis_writers WHERE node = 'failing-node'")
