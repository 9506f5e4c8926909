"""A process stopped (SIGSTOP) while it holds the apply lock shared, as a GC or VM stall
stops a consumer in the middle of a batch, does not hold up the rest of the service.

PostgreSQL queues lock requests in order, so a rebuild waiting for the lock exclusively
behind the stopped holder would make every later consumer batch wait too, for as long as
the stall lasts. The holder here is a child process running the service's own
``PostgresStore.apply_lock`` with a short idle grace (stores/apply_lock.py): it holds the
lock alive past several graces first (its heartbeat keeps it), then is stopped; the
rebuild and a run submitted meanwhile must both go through within seconds, and the holder,
once resumed, finds its transaction gone (its batch would be applied again from the log).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import httpx

from rankd.runtime import Runtime
from tests.support.common import ADMIN_H, SERVER_H, Urls, new_board_id
from tests.support.durable import wait_consumer_idle

GRACE_S = 1.0  # the holder's idle-in-transaction grace
LIVE_S = 4 * GRACE_S  # how long it holds the lock alive before it is stopped
WITHIN_S = 30.0  # what the rebuild and the run may take while the holder is stopped

HOLDER = f"""
import asyncio, os, sys
from rankd.stores.postgres import PostgresStore

async def main() -> None:
    pg = PostgresStore(sys.argv[1], min_size=1, max_size=2)
    pg.shared_idle_s = {GRACE_S}
    await pg.open()
    try:
        async with pg.apply_lock(exclusive=False) as conn:
            print("held", flush=True)
            await asyncio.sleep({LIVE_S})
            await conn.execute("SELECT 1")  # alive past several graces: not cut off
            print("alive", flush=True)
            # stopped in here by the test; after SIGCONT, a line says to go on
            await asyncio.to_thread(sys.stdin.readline)
        print("committed", flush=True)
    except Exception as exc:
        print("cut off:", type(exc).__name__, exc, flush=True)
    os._exit(0)  # not the pool's orderly close: only what the lock did matters here

asyncio.run(main())
"""


async def test_a_stopped_shared_holder_is_cut_off_and_holds_up_nothing_for_long(
    urls: Urls, runtime: Runtime, client: httpx.AsyncClient
) -> None:
    board = new_board_id("stalled")
    created = await client.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
    assert created.status_code == 201, created.text
    # entries in PostgreSQL: the rebuild below has a period to take the lock for
    for i in range(3):
        run = {"run_id": f"before{i}", "player_id": f"p{i}", "score": 10 + i}
        sent = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert sent.status_code == 200, sent.text
    await wait_consumer_idle(client, runtime)
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        urls.postgres,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert holder.stdin is not None and holder.stdout is not None
        assert await holder.stdout.readline() == b"held\n"
        assert await holder.stdout.readline() == b"alive\n"
        holder.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        # the rebuild asks for the lock exclusively: it waits for the stopped holder
        rebuild = asyncio.create_task(runtime.rebuilder.rebuild(board=board))
        await asyncio.sleep(0.2)
        # a run logged meanwhile: its batch asks for the lock behind the rebuild
        run = {"run_id": "r1", "player_id": "p9", "score": 50}
        sent = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert sent.status_code == 200, sent.text
        report = await asyncio.wait_for(rebuild, WITHIN_S)
        rebuilt = time.monotonic() - started
        await wait_consumer_idle(client, runtime, within_s=WITHIN_S)
        waited = time.monotonic() - started
        print(
            f"holder stopped: rebuild through after {rebuilt:.1f}s, the run's batch after"
            f" {waited:.1f}s"
        )
        assert report is not None and report.members >= 3, report
        # it did wait for the stopped holder (else this test shows nothing)
        assert rebuilt >= GRACE_S, rebuilt
        top = await client.get(f"/v1/boards/{board}/top")
        assert top.status_code == 200, top.text
        assert [e["player_id"] for e in top.json()["entries"]] == ["p9", "p2", "p1", "p0"]
        holder.send_signal(signal.SIGCONT)
        told, _ = await asyncio.wait_for(holder.communicate(b"go on\n"), 30)
        print(told.decode().strip())
        assert told.startswith(b"cut off:"), told
    finally:
        if holder.returncode is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            await holder.wait()
