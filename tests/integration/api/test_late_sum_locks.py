"""A late run on a sum board waits out a player's count lock that the log consumer may hold
for its whole batch (services/late_sums.py, COUNT_LOCK_WAIT_MS), rather than answering 503
after 2 s."""

from __future__ import annotations

import asyncio
import time

import httpx
import psycopg

from tests.integration.api.test_oracle import DAY_MS, iso, sum_board
from tests.support.common import SERVER_H, Urls

HELD_S = 3.0  # past the apply lock's 2 s, within the count lock's wait


async def test_a_late_run_waits_out_a_count_lock_held_for_seconds(
    client: httpx.AsyncClient, urls: Urls
) -> None:
    board_id = await sum_board(client)
    player = "p-held"
    late = {
        "run_id": "late-1",
        "player_id": player,
        "score": 7,
        "ended_at": iso(int(time.time() * 1000) - 3 * DAY_MS),  # past Redis's horizon
    }
    count_lock = "|".join((board_id, "all-time", "all-time", "", player))
    holder = await psycopg.AsyncConnection.connect(urls.postgres)
    async with holder, holder.transaction():
        await holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (count_lock,))
        submit = asyncio.create_task(
            client.post(f"/v1/boards/{board_id}/runs", json=late, headers=SERVER_H)
        )
        await asyncio.sleep(HELD_S)
        # still waiting: the late path takes this very lock (and did not give up at 2 s)
        assert not submit.done(), (await submit).text
    response = await submit
    assert response.status_code == 200, response.text
    [standing] = response.json()["standings"]
    assert (standing["score"], standing["improved"]) == (7, True)
