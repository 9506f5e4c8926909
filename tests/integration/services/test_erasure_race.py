"""An erasure made while the log scrubber runs a round, against the real servers.

The scrubber reads the pending erasures at the start of a round and republishes the other
runs of every message holding an erased player's run. A player erased meanwhile whose run
shares such a message must not be republished: the copy's sequence is after their erasure,
so the consumer and every replay would take it for a new player's run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from psycopg import AsyncConnection

from rankd.runtime import Runtime
from rankd.services.deletion import SCRUB_LOCK
from rankd.stores import deletions as db
from tests.integration.services.test_admin import get, ids, log_runs_of, replay_everything
from tests.support.common import ADMIN_H, SERVER_H, new_board_id
from tests.support.durable import wait_consumer_idle


async def test_a_player_erased_during_a_scrub_round_stays_erased(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    board = new_board_id("race")
    path = f"/v1/boards/{board}"
    assert (await client.put(path, json={}, headers=ADMIN_H)).status_code == 201
    a, c, d = (new_board_id(p) for p in ("a", "c", "d"))
    batch = [  # one request: one log message
        {"run_id": "r1", "player_id": a, "score": 90},
        {"run_id": "r2", "player_id": c, "score": 80},
        {"run_id": "r3", "player_id": d, "score": 70},
    ]
    response = await client.post(f"{path}/runs:batch", json={"runs": batch}, headers=SERVER_H)
    assert response.status_code == 200 and "error" not in response.text
    await wait_consumer_idle(client, runtime)
    assert ids(await get(client, f"{path}/top")) == [a, c, d]
    shared = await log_runs_of(runtime, c)
    assert len(shared) == 1 and [s for s, _ in await log_runs_of(runtime, a)] == [shared[0][0]]

    # this test is the scrubber for now: the runtime's own waits for the lease
    deletions = runtime.deletions
    for _ in range(200):
        async with runtime.pg.lease(SCRUB_LOCK) as lease:
            if lease is None:
                await asyncio.sleep(0.05)
                continue
            assert (await client.delete(f"/v1/players/{a}", headers=ADMIN_H)).status_code == 200
            pending = await db.unscrubbed(lease)  # the round starts: C is not erased yet
            assert a in pending and c not in pending
            assert (await client.delete(f"/v1/players/{c}", headers=ADMIN_H)).status_code == 200
            assert await deletions._scrub(pending) >= 1
            await db.mark_scrubbed(lease, pending, 0)
            break
    else:
        raise AssertionError("the scrubber's lease was never free")

    # the next round scrubs C's erasure; neither player is anywhere, D is still there
    await deletions.scrub_once()
    await wait_consumer_idle(client, runtime)
    assert ids(await get(client, f"{path}/top")) == [d]
    cur = await pg.execute(
        "SELECT player_id FROM player_best WHERE board_id = %s ORDER BY player_id", (board,)
    )
    assert [r[0] for r in await cur.fetchall()] == [d]
    for player in (a, c):
        assert await log_runs_of(runtime, player) == [], player
    assert [r for _, r in await log_runs_of(runtime, d)] == ["r3"]
    cur = await pg.execute(
        "SELECT count(*) FROM run_fingerprints WHERE board_id = %s AND player_id = ANY(%s)",
        (board, [a, c]),
    )
    assert (await cur.fetchone()) == (0,)

    # nor does a replay bring C back
    await replay_everything(runtime)
    assert ids(await get(client, f"{path}/top")) == [d]
    cur = await pg.execute("SELECT count(*) FROM player_best WHERE player_id = %s", (c,))
    assert (await cur.fetchone()) == (0,)
