"""The service killed (kill -9) while first runs place players on a league board.

A player's place is decided in Redis before their run is logged, and the log carries it
(services/leagues.py), so a kill can fall between the two. After a new service heals what
was logged: every acknowledged run's player holds one place, PostgreSQL records the place
Redis holds for each, no place is given twice, and a place only Redis holds belongs to a
player none of whose runs was acknowledged (the kill cut their submit off; a resend of
their run takes that same place)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from redis.asyncio import Redis

from tests.integration.services.test_leagues import placements
from tests.support.durable import wait_consumer_idle
from tests.support.wire import daily_id, from_ms
from tests.system.test_failures import (
    ADMIN_H,
    MAX_RUN_SCORE,
    WINDOWS,
    Ledger,
    deployment,
    recover_and_check,
    stream,
    wait_acked,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LEAGUE = {"window": "daily", "tiers": ["bronze", "silver"], "cohort_size": 5}
PLAYERS = [f"lg{i:04d}" for i in range(1500)]  # most runs are a player's first


async def test_service_killed_while_placing_players_gives_no_place_twice(
    server_dir: Path,
) -> None:
    name = "service-kill-league"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        d.board = f"league-{uuid.uuid4().hex[:10]}"
        config = {"windows": list(WINDOWS), "max_run_score": MAX_RUN_SCORE, "league": LEAGUE}
        created = await d.http.put(f"/v1/boards/{d.board}", json=config, headers=ADMIN_H)
        assert created.status_code == 201, created.text
        ledger = Ledger()
        stop = asyncio.Event()
        load = asyncio.create_task(
            stream(d.http, d.board, ledger, seconds=25, stop=stop, players=PLAYERS)
        )
        try:
            await wait_acked(ledger, 600, within_s=10)
            await asyncio.to_thread(d.kill_service)
            killed_after = len(ledger.acked)
            await asyncio.sleep(0.3)
            await d.start_service()
            await asyncio.sleep(2)
        finally:
            stop.set()
            await load
        print(f"\n[{name}] killed after {killed_after} acks; {ledger.summary()}")
        await recover_and_check(name, d, ledger, within_s=20)
        await wait_consumer_idle(d.http, within_s=30)

        redis = Redis.from_url(d.servers.redis_url)
        failures: list[str] = []
        try:
            async with await psycopg.AsyncConnection.connect(d.servers.postgres_url) as pg:
                days = {daily_id(from_ms(s.ended_ms)) for s in ledger.all_sent()}
                for day in sorted(days):
                    in_redis, durable = await placements(redis, pg, d.board, day)
                    failures += check_day(name, ledger, day, in_redis, durable)
        finally:
            await redis.aclose()
        assert not failures, "\n".join(failures)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


def check_day(
    name: str, ledger: Ledger, day: str, in_redis: dict[str, str], durable: dict[str, str]
) -> list[str]:
    """The module docstring's checks for one day's placements."""
    acked = {s.player for s in ledger.acked.values() if daily_id(from_ms(s.ended_ms)) == day}
    unplaced = sorted(acked - set(durable))
    differ = sorted(p for p in durable if in_redis.get(p) != durable[p])
    places = list(in_redis.values())
    twice = len(places) - len(set(places))
    only_redis = set(in_redis) - set(durable)
    never_acked = {s.player for s in ledger.all_sent()} - acked
    unexplained = sorted(only_redis - never_acked)
    print(
        f"[{name}] {day}: {len(durable)} placed in PostgreSQL, {len(in_redis)} in Redis "
        f"({len(only_redis)} only there, players never acknowledged), "
        f"{len(acked)} players acknowledged"
    )
    failures = []
    if unplaced:
        failures.append(f"{len(unplaced)} acknowledged players unplaced: {unplaced[:5]}")
    if differ:
        failures.append(f"{len(differ)} places differ between Redis and PostgreSQL: {differ[:5]}")
    if twice:
        failures.append(f"{twice} places given twice")
    if unexplained:
        failures.append(f"places only in Redis of acknowledged players: {unexplained[:5]}")
    return failures
