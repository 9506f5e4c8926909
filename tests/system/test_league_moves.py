"""A league's moves happen exactly once (CONTRACT v1.3 "Leagues"): a `rankd freeze` killed
halfway through them (kill -9, its transaction blocked on a lock the test holds, so the kill
lands in the middle for sure) leaves no player moved and no period frozen; the next pass
moves everyone once; two passes at the same time move no one twice."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import httpx
import psycopg
import pytest

from rankd.leagues import League
from rankd.periods import period_at
from rankd.runtime import Runtime
from tests.integration.services.test_admin import freeze
from tests.integration.services.test_leagues import batch
from tests.support.common import ADMIN_H, Urls, new_board_id
from tests.support.durable import wait_consumer_idle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LEAGUE = League("hourly", ("bronze", "silver", "gold"), cohort_size=30, promote=5, relegate=5)
PLAYERS = 3_000


def counts(postgres_url: str, board: str, period: str) -> tuple[int, int, int, int]:
    """(history rows, tier rows, moves rows, archives) of the board's period."""
    found = []
    with psycopg.connect(postgres_url) as conn:
        for table in ("league_history", "league_tiers", "league_moves", "period_archives"):
            where = "board_id = %(b)s" + (" AND period = %(p)s" if table != "league_tiers" else "")
            row = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {where}", {"b": board, "p": period}
            ).fetchone()
            assert row is not None
            found.append(int(row[0]))
    return found[0], found[1], found[2], found[3]


async def test_a_freeze_killed_midway_moves_no_one_and_the_next_moves_everyone_once(
    client: httpx.AsyncClient, runtime: Runtime, urls: Urls, tmp_path: Path
) -> None:
    board = new_board_id("lg-kill")
    body: dict[str, Any] = {"windows": ["hourly"], "league": LEAGUE.as_json()}
    created = await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)
    assert created.status_code == 201, created.text
    now = int(datetime.now(UTC).timestamp() * 1000)
    period = period_at("hourly", now).id  # the board's first: placements come at once
    for first in range(0, PLAYERS, 500):
        await batch(client, board, first)
    await wait_consumer_idle(client, runtime)
    closed = await client.post(
        f"/v1/boards/{board}/periods/{period}/close", params={"window": "hourly"}, headers=ADMIN_H
    )
    assert closed.status_code == 200, closed.text

    env = {
        **os.environ,
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_SEASON_SETTLE_S": "0",
    }
    with psycopg.connect(urls.postgres, autocommit=False) as holder:
        # the moves' tier update waits on this lock: the kill finds them half done
        holder.execute("LOCK TABLE league_tiers IN ACCESS EXCLUSIVE MODE")
        with (tmp_path / "freeze.log").open("wb") as log:
            job = spawn_freeze(board, env, log)
            try:
                deadline = time.monotonic() + 60
                while not _waiting_on_tiers(urls.postgres):
                    assert job.poll() is None, (tmp_path / "freeze.log").read_text()
                    assert time.monotonic() < deadline, "the freeze never reached the moves"
                    await asyncio.sleep(0.01)
                job.kill()
                job.wait(30)
            finally:
                if job.poll() is None:
                    job.kill()
        holder.rollback()
    # the blocked statement ends with its dead client's transaction: nothing committed
    deadline = time.monotonic() + 30
    while _waiting_on_tiers(urls.postgres):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert counts(urls.postgres, board, period) == (0, 0, 0, 0)

    # the next pass, and two at once after it: everyone moved once
    await freeze(runtime, board)
    await asyncio.gather(freeze(runtime, board, 30), freeze(runtime, board, 30))
    history, tiers, moves, archives = counts(urls.postgres, board, period)
    assert (history, moves, archives) == (PLAYERS, 1, 1)
    cohorts = PLAYERS // LEAGUE.cohort_size
    assert tiers == cohorts * LEAGUE.promote  # bronze relegates no one
    with psycopg.connect(urls.postgres) as conn:
        moved: dict[str, int] = dict(
            conn.execute(
                "SELECT moved, count(*) FROM league_history WHERE board_id = %s GROUP BY moved",
                (board,),
            ).fetchall()
        )
    assert moved == {"up": cohorts * LEAGUE.promote, "stay": PLAYERS - cohorts * LEAGUE.promote}
    # each cohort's top five by score went up: checked on one cohort's read of the archive
    cohort = await client.get(f"/v1/boards/{board}/cohorts/bronze-1", params={"period": period})
    assert cohort.status_code == 200, cohort.text
    entries = cohort.json()["entries"]
    assert [e["zone"] for e in entries] == ["promote"] * 5 + ["stay"] * 25
    for entry in entries[:5]:
        history_of = await client.get(
            f"/v1/players/{entry['player_id']}/leagues", params={"board": board}
        )
        assert history_of.json()["tier"] == "silver"
        assert history_of.json()["history"][0]["moved"] == "up"


def spawn_freeze(board: str, env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "rankd.cli", "freeze", "--board", board]
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def _waiting_on_tiers(postgres_url: str) -> bool:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND query LIKE %s",
            ("%INSERT INTO league_tiers%",),
        ).fetchone()
    return bool(row and row[0])
