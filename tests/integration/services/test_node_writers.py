"""Stray writes to a replaced primary caught up from PostgreSQL's record of who wrote where
(services/node_writers.py): an instance restarted during a partition forgot that its
consumer acked runs on the old primary; any instance replays them into the current one.

The old primary here is a node id with a restore's note (where the restore replacing it
began, as services/rebuild/restart.py writes it) and a run's entry removed from the
current Redis: what the current primary lacks when only the old one took a batch."""

from __future__ import annotations

import time

import httpx
from redis.asyncio import Redis

from rankd.runtime import Runtime
from rankd.services.node_writers import NodeWriters
from rankd.stores import redis_writers
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
    await redis_writers.note(runtime.pg, "old-node", now_ms - 60_000)
    await redis_writers.note(runtime.pg, "busy-node", now_ms)  # still written to: left alone
    await redis_writers.note(runtime.pg, "noteless-node", now_ms - 60_000)  # no restore's note
    current = await identity(runtime.redis.client)
    writers = NodeWriters(runtime.pg, runtime.restorer, quiet_s=30.0)
    assert await writers.round(current) == 1
    assert await top(client, board) == [("pB", 20), ("pA", 10)]
    # both quiet notes are gone: one caught up, the other with nothing to replay from
    quiet = await redis_writers.quiet(runtime.pg, "", now_ms + 1)
    assert "old-node" not in quiet and "noteless-node" not in quiet, quiet
    # noted: the current node; not caught up (it is the current one), nor the busy one
    assert set(await redis_writers.quiet(runtime.pg, "", int(time.time() * 1000) + 1)) >= {
        current,
        "busy-node",
    }
    writers._last = 0.0  # the next round at once
    assert await writers.round(current) == 0
    async with runtime.pg.connection() as conn:  # leave no note behind for other tests
        await conn.execute("DELETE FROM redis_writers WHERE node = 'busy-node'")
