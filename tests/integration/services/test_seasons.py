"""Seasons against the real servers: closed periods freeze into the archive, leave Redis
after their retention, and read exactly as they did live; the job runs once at a time
under its lease; the clock is injected to cross the year change.

Passes here name their boards (``boards=[...]``) so they leave other tests' boards alone;
the session app runs no background job (conftest), except where a test starts its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.api.app import create_app
from rankd.periods import ALL_TIME, PeriodRef, parse_period
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.reads import Reader
from rankd.services.scope import Scope
from rankd.services.seasons import SEASON_LOCK, SeasonJob
from rankd.stores.archive import ArchiveStore, FrozenEntry
from rankd.stores.redis import keys
from rankd.stores.runlog import LogMessage
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings, new_board_id
from tests.support.durable import every_shard, wait_consumer_idle, wait_until
from tests.support.wire import iso

WINDOWS = ["daily", "weekly", "monthly"]
LONG_GRACE_S = 45 * 86_400  # long enough to submit into last month's periods
DAY = timedelta(days=1)


@pytest.fixture
def other(bare_runtime: Runtime) -> Runtime:
    """A second instance (its own pools and lease connections), as `rankd freeze` opens one."""
    return bare_runtime


def job(rt: Runtime, cls: type[SeasonJob] = SeasonJob, **overrides: Any) -> SeasonJob:
    """A season job on ``rt``'s stores, like its own, with ``overrides`` (settle 0 unless
    given)."""
    settings: dict[str, Any] = {
        "applied_through": rt.seasons.applied_through,
        "settle_ms": 0,
        **overrides,
    }
    return cls(rt.redis.reads, rt.redis.seasons, rt.pg, rt.boards, rt.rebuilder, **settings)


# --- building boards with closed periods --------------------------------------------------


def closed_moments(now: datetime) -> list[datetime]:
    """Moments inside periods that are closed once grace is 0, whatever today is: two and
    three days ago (daily), nine days ago (an earlier ISO week), and last month."""
    last_month = now.replace(day=1, hour=12, minute=0, second=0, microsecond=0) - DAY * 10
    return [now - DAY * 2, now - DAY * 3, now - DAY * 9, last_month]


async def put_board(client: httpx.AsyncClient, board_id: str, body: dict[str, Any]) -> None:
    response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
    assert response.status_code in (200, 201), response.text


async def submit_batch(
    client: httpx.AsyncClient, board_id: str, runs: list[dict[str, Any]]
) -> None:
    for first in range(0, len(runs), 500):
        response = await client.post(
            f"/v1/boards/{board_id}/runs:batch",
            json={"runs": runs[first : first + 500]},
            headers=SERVER_H,
        )
        assert response.status_code == 200, response.text
        for result in response.json()["results"]:
            assert "error" not in result, result


async def random_board(
    client: httpx.AsyncClient,
    rng: random.Random,
    *,
    windows: list[str] | None = None,
    shards: int = 1,
) -> tuple[str, dict[str, Any], list[str]]:
    """A board of random order and policy with a few dozen players, many of them tied, its
    runs spread over periods that close when grace drops to 0 (done here)."""
    board_id = new_board_id("season")
    config = {
        "windows": windows or ["all-time", *rng.sample(WINDOWS, rng.randint(1, 3))],
        "order": rng.choice(["desc", "asc"]),
        "policy": rng.choice(["best", "sum"]),
        "max_score": rng.choice([1000, 1_000_000]),
        "grace_seconds": LONG_GRACE_S,
        "retention_days": dict.fromkeys(WINDOWS, 100),  # nothing leaves Redis unasked
        "shards": shards,
    }
    await put_board(client, board_id, config)
    now = datetime.now(UTC).replace(microsecond=0)
    moments = closed_moments(now)
    tag = board_id.split("-")[1][:6]  # names are global: players of this board only
    players = [f"{tag}-p{i:02d}" for i in range(rng.randint(20, 40))]
    scores = [rng.randrange(0, 50) * 7 for _ in range(6)]  # few values: many ties
    runs = []
    for i in range(rng.randint(60, 120)):
        # the same instant for many runs: exact composite ties, ordered by player id
        ended = rng.choice(moments) + timedelta(seconds=rng.choice([0, 0, 1, 37]))
        runs.append(
            {
                "run_id": f"r{i}",
                "player_id": rng.choice(players),
                "score": rng.choice(scores),
                "ended_at": iso(ended),
            }
        )
    await submit_batch(client, board_id, runs)
    for player in rng.sample(players, len(players) // 3):
        response = await client.put(
            f"/v1/players/{player}",
            json={"name": f"name of {player}"},
            headers=SERVER_H,
        )
        assert response.status_code == 200, response.text
    # applied everywhere before grace drops: the consumer decides closed by today's grace
    await wait_consumer_idle(client)
    await put_board(client, board_id, {"grace_seconds": 0})
    return board_id, config, players


# --- every read, as JSON ----------------------------------------------------------------


async def listed_periods(client: httpx.AsyncClient, board_id: str, window: str) -> dict[str, str]:
    response = await client.get(f"/v1/boards/{board_id}/periods", params={"window": window})
    assert response.status_code == 200, response.text
    return {p["period"]: p["status"] for p in response.json()["periods"]}


async def every_read(
    client: httpx.AsyncClient, board_id: str, config: dict[str, Any], players: list[str]
) -> dict[tuple[Any, ...], Any]:
    """Every read of every closed period: top (whole and paged), each player, around,
    friends, rank-of at many scores, and reads of players without an entry."""
    reads: dict[tuple[Any, ...], Any] = {}
    base = f"/v1/boards/{board_id}"
    rng = random.Random(board_id)

    async def read(name: tuple[Any, ...], path: str, **params: Any) -> Any:
        response = await client.get(f"{base}{path}", params=params)
        assert response.status_code in (200, 404), response.text
        body = response.json()
        if isinstance(body, dict) and body.get("next_cursor") and "cursor" not in params:
            # a live list's cursor holds a position, an archived one's an offset: their
            # bytes differ, the page after them must not
            after = {k: v for k, v in params.items() if k != "offset"}
            await read(("after", *name), path, **after, cursor=body["next_cursor"])
        if isinstance(body, dict) and "next_cursor" in body:
            body = {**body, "next_cursor": body["next_cursor"] is not None}
        reads[name] = (response.status_code, body)
        return body

    for window in config["windows"]:
        if window == "all-time":
            continue
        for period, status in (await listed_periods(client, board_id, window)).items():
            if status == "open":
                continue
            scope = {"window": window, "period": period}
            top = await read(("top", window, period), "/top", n=1000, **scope)
            assert top["total"] > 0
            await read(("page", window, period), "/top", n=7, offset=5, **scope)
            await read(("beyond", window, period), "/top", n=3, offset=top["total"], **scope)
            for player in [*players, "nobody"]:
                await read(("player", window, period, player), f"/players/{player}", **scope)
                await read(
                    ("around", window, period, player),
                    f"/players/{player}/around",
                    range=rng.choice([0, 1, 3]),
                    **scope,
                )
            for player in rng.sample(players, 5):
                friends = ",".join([*rng.sample(players, 6), "nobody", player])
                await read(
                    ("friends", window, period, player),
                    f"/players/{player}/friends",
                    ids=friends,
                    **scope,
                )
            held = sorted({e["score"] for e in top["entries"]})
            probes = {0, config["max_score"], *held, *(s + 1 for s in held), *(s - 1 for s in held)}
            for score in sorted(p for p in probes if 0 <= p <= config["max_score"]):
                await read(("rank-of", window, period, score), "/rank-of", score=score, **scope)
    return reads


async def closed_periods(
    client: httpx.AsyncClient, board_id: str, config: dict[str, Any]
) -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for window in config["windows"]:
        if window != "all-time":
            for period, status in (await listed_periods(client, board_id, window)).items():
                if status != "open":
                    found.add((window, period, status))
    return found


async def archive_rows(
    pg: AsyncConnection[Any], board_id: str
) -> dict[tuple[str, str], tuple[int, str, bool, int]]:
    """(window, period) -> (entries, source, archived, archive_entries rows)."""
    cur = await pg.execute(
        "SELECT win, period, entries, source, archived_ms IS NOT NULL,"
        " (SELECT count(*) FROM archive_entries e WHERE e.archive_id = a.archive_id)"
        " FROM period_archives a WHERE board_id = %s",
        (board_id,),
    )
    return {(r[0], r[1]): tuple(r[2:]) for r in await cur.fetchall()}


async def in_redis(redis: Redis, board_id: str, window: str, period: str) -> int:
    found = 0
    for pk in every_shard(board_id, window, period):
        found += int(await redis.exists(pk.public, pk.runs))
    return found


async def zcard(redis: Redis, board_id: str, window: str, period: str) -> int:
    return sum([await redis.zcard(pk.public) for pk in every_shard(board_id, window, period)])


# --- a period reads the same live, closed and archived ------------------------------------


@pytest.mark.parametrize(("seed", "shards"), [(0, 1), (1, 1), (2, 1), (3, 1), (0, 4), (1, 7)])
async def test_a_period_reads_the_same_live_frozen_and_archived(
    client: httpx.AsyncClient,
    redis: Redis,
    pg: AsyncConnection[Any],
    seed: int,
    shards: int,
    runtime: Runtime,
) -> None:
    """On a sharded board too: the freeze merges its shards into one archived ranking."""
    rng = random.Random(seed)
    board_id, config, players = await random_board(client, rng, shards=shards)
    rt = runtime
    closed = await closed_periods(client, board_id, config)
    assert closed and {s for _, _, s in closed} == {"closed"}
    live = await every_read(client, board_id, config, players)

    report = await job(rt).run_pass(boards=[board_id])
    assert (report.lease, report.frozen, report.archived) == (True, len(closed), 0)
    rows = await archive_rows(pg, board_id)
    assert set(rows) == {(w, p) for w, p, _ in closed}
    for (window, period), (entries, source, archived, copied) in rows.items():
        assert (source, archived) == ("redis", False)
        assert entries == copied == await zcard(redis, board_id, window, period)
    assert report.entries == sum(r[0] for r in rows.values())
    assert await closed_periods(client, board_id, config) == closed
    assert await every_read(client, board_id, config, players) == live  # frozen, from Redis

    # retention 0 from now on: the next pass lets every closed period leave Redis
    await put_board(client, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
    report = await job(rt).run_pass(boards=[board_id])
    assert (report.frozen, report.archived) == (0, len(closed))
    for window, period, _ in closed:
        assert await in_redis(redis, board_id, window, period) == 0
    assert await closed_periods(client, board_id, config) == {
        (w, p, "archived") for w, p, _ in closed
    }
    assert await every_read(client, board_id, config, players) == live  # from the archive

    # a rebuild (as after a lost Redis, or at start) does not bring archived periods back
    await rt.rebuilder.rebuild(board=board_id)
    await rt.rebuilder.rebuild(board=board_id, when="missing")
    for window, period, _ in closed:
        assert await in_redis(redis, board_id, window, period) == 0
    assert await every_read(client, board_id, config, players) == live


async def test_a_period_leaves_redis_only_after_a_build_of_it_has_swapped(
    client: httpx.AsyncClient, redis: Redis, runtime: Runtime
) -> None:
    """A rebuild, or a resharding's build of its new layout, holds the apply lock
    exclusively and swaps its keys in at the end: the job marks a period archived and
    unlinks its keys under the shared lock, so they cannot go before that swap and be left
    in Redis for good, served by nothing."""
    board_id, config, _ = await random_board(client, random.Random(11))
    closed = await closed_periods(client, board_id, config)
    assert (await job(runtime).run_pass(boards=[board_id])).frozen == len(closed)
    await put_board(client, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
    window, period, _ = sorted(closed)[0]
    async with runtime.pg.apply_lock(exclusive=True):  # a build under way
        passing = asyncio.create_task(job(runtime).run_pass(boards=[board_id]))
        await asyncio.sleep(0.5)
        assert not passing.done(), "the job unlinked while a build held the lock"
        # the build's swap: the period's key, as the build wrote it
        await redis.zadd(keys.period_keys(board_id, window, period).public, {"m": 1})
    report = await asyncio.wait_for(passing, 60)
    assert report.archived == len(closed), report
    for w, p, _ in closed:
        assert await in_redis(redis, board_id, w, p) == 0, (w, p)


async def test_a_second_pass_finds_nothing_to_do(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    board_id, config, _ = await random_board(client, random.Random(7), windows=["daily"])
    rt = runtime
    first = await job(rt).run_pass(boards=[board_id])
    assert first.frozen == len(await closed_periods(client, board_id, config)) > 0
    again = await job(rt).run_pass(boards=[board_id])
    assert (again.frozen, again.entries, again.archived, again.thawed) == (0, 0, 0, 0)


async def test_a_period_whose_redis_key_is_gone_freezes_from_player_best(
    client: httpx.AsyncClient, redis: Redis, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    board_id, config, players = await random_board(client, random.Random(11))
    rt = runtime
    closed = await closed_periods(client, board_id, config)
    live = await every_read(client, board_id, config, players)
    for window, period, _ in closed:
        pk = keys.period_keys(board_id, window, period)
        assert await redis.delete(pk.public) == 1  # lost (and not rebuilt yet)

    report = await job(rt).run_pass(boards=[board_id])
    assert report.frozen == len(closed)
    rows = await archive_rows(pg, board_id)
    assert {r[1] for r in rows.values()} == {"player_best"}
    # frozen and its key gone: served from the archive, ranks and ties as Redis had them
    assert await every_read(client, board_id, config, players) == live


@contextlib.asynccontextmanager
async def app_client(
    urls: Urls, **settings: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    """A client of an app of its own (its own Reader and caches), with ``settings``, and
    that app's Runtime."""
    app = create_app(make_settings(urls, **settings))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://rankd.test") as http,
    ):
        yield http, app.state.runtime


async def test_cached_archive_states_still_give_the_right_answers(urls: Urls, redis: Redis) -> None:
    """With the archive state cache on: a read that finds a key gone after this process
    cached "frozen, still in Redis" turns to the archive at once; one that cached "not
    frozen" does within a second."""
    async with app_client(urls, archive_state_cache_s=2.0) as (http, rt):
        board_id, config, players = await random_board(http, random.Random(12))
        closed = await closed_periods(http, board_id, config)
        live = await every_read(http, board_id, config, players)  # caches "not frozen"
        await job(rt).run_pass(boards=[board_id])
        await asyncio.sleep(2.1)  # the cached "not frozen" expires
        assert await every_read(http, board_id, config, players) == live  # caches "frozen"
        for window, period, _ in closed:
            # as if the job's UNLINK landed after this process cached "still in Redis"
            assert await rt.redis.seasons.unlink_period(PeriodRef(board_id, window, period)) >= 1
        assert await every_read(http, board_id, config, players) == live

        board_id, config, players = await random_board(http, random.Random(13))
        live = await every_read(http, board_id, config, players)  # caches "not frozen"
        await put_board(http, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
        report = await job(rt).run_pass(boards=[board_id])  # frozen and gone in one pass
        assert report.archived == report.frozen > 0
        await asyncio.sleep(1.0)
        assert await every_read(http, board_id, config, players) == live


async def test_a_period_archived_since_the_listing_was_cached_is_listed_within_a_second(
    urls: Urls,
) -> None:
    """GET /periods lists what Redis holds and the archive's states: a period the season
    job archives leaves Redis, so a cached listing of the states from before the pass left
    it out altogether (for the whole cache time; CI saw it as an empty read set)."""
    async with app_client(urls, archive_state_cache_s=60.0) as (http, rt):
        board_id, config, _ = await random_board(http, random.Random(14))
        windows = [w for w in config["windows"] if w != ALL_TIME]
        before = {w: await listed_periods(http, board_id, w) for w in windows}  # cached
        assert any(s == "closed" for periods in before.values() for s in periods.values())
        await put_board(http, board_id, {"retention_days": dict.fromkeys(WINDOWS, 0)})
        report = await job(rt).run_pass(boards=[board_id])  # frozen and gone in one pass
        assert report.archived == report.frozen > 0
        await asyncio.sleep(1.05)
        for window in windows:
            expected = {p: ("archived" if s == "closed" else s) for p, s in before[window].items()}
            assert await listed_periods(http, board_id, window) == expected, window


# --- configuration changes apply to periods that exist ------------------------------------


async def test_raising_grace_reopens_a_frozen_period_and_it_freezes_again(
    client: httpx.AsyncClient, redis: Redis, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    board_id, config, players = await random_board(client, random.Random(21), windows=["daily"])
    rt = runtime
    closed = await closed_periods(client, board_id, config)
    live = await every_read(client, board_id, config, players)
    await put_board(client, board_id, {"retention_days": {"daily": 0}})
    report = await job(rt).run_pass(boards=[board_id])
    assert report.archived == len(closed)

    # grace raised past now: the archived periods are open again, back in Redis
    await put_board(client, board_id, {"grace_seconds": LONG_GRACE_S})
    report = await job(rt).run_pass(boards=[board_id])
    assert report.thawed == len(closed)
    assert await archive_rows(pg, board_id) == {}
    for window, period, _ in closed:
        assert await redis.exists(keys.period_keys(board_id, window, period).public) == 1
        assert (await listed_periods(client, board_id, window))[period] == "open"
    await put_board(client, board_id, {"grace_seconds": 0})
    assert await every_read(client, board_id, config, players) == live

    # a late run accepted meanwhile is in the next freeze
    await put_board(client, board_id, {"grace_seconds": LONG_GRACE_S})
    window, period, _ = sorted(closed)[0]
    ended = datetime.fromisoformat(f"{period}T12:00:00+00:00")
    await submit_batch(
        client,
        board_id,
        [{"run_id": "late", "player_id": "latecomer", "score": 3, "ended_at": iso(ended)}],
    )
    await wait_consumer_idle(client)
    await put_board(client, board_id, {"grace_seconds": 0})
    report = await job(rt).run_pass(boards=[board_id])
    assert report.frozen == report.archived == len(closed)
    top = (
        await client.get(
            f"/v1/boards/{board_id}/top", params={"window": window, "period": period, "n": 1000}
        )
    ).json()
    assert "latecomer" in {e["player_id"] for e in top["entries"]}
    assert top["total"] == (await archive_rows(pg, board_id))[(window, period)][0]


async def test_the_job_waits_for_runs_still_in_the_log(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    board_id, config, _ = await random_board(client, random.Random(31), windows=["daily"])
    rt = runtime

    async def unapplied_since_2020() -> int | None:
        return 1_577_836_800_000  # a run received in 2020 is still unapplied

    report = await job(rt, applied_through=unapplied_since_2020).run_pass(boards=[board_id])
    assert (report.frozen, report.waiting) == (
        0,
        len(await closed_periods(client, board_id, config)),
    )
    assert (await job(rt).run_pass(boards=[board_id])).frozen == report.waiting


class FailingOnce(SeasonJob):
    """A job whose first freeze fails, as if Redis went away mid-period."""

    failed = False

    async def _freeze(self, *args: Any, **kwargs: Any) -> int | None:
        if not FailingOnce.failed:
            FailingOnce.failed = True
            raise ConnectionError("Redis went away")
        return await super()._freeze(*args, **kwargs)


async def test_one_failing_period_does_not_hold_up_the_others(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    board_id, config, _ = await random_board(client, random.Random(35))
    closed = await closed_periods(client, board_id, config)
    report = await job(runtime, FailingOnce).run_pass(boards=[board_id])
    assert (report.failed, report.frozen) == (1, len(closed) - 1)
    report = await job(runtime).run_pass(boards=[board_id])
    assert (report.failed, report.frozen) == (0, 1)  # retried on the next pass
    assert len(await archive_rows(pg, board_id)) == len(closed)


# --- one pass at a time: the lease ---------------------------------------------------------


class HeldJob(SeasonJob):
    """A job that stops before its first page until ``go`` is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def _redis_pages(
        self, ref: PeriodRef, codec: Any, start_ms: int
    ) -> AsyncIterator[list[FrozenEntry]]:
        self.entered.set()
        await self.go.wait()
        async for page in super()._redis_pages(ref, codec, start_ms):
            yield page


async def lease_holder(pg: AsyncConnection[Any]) -> int | None:
    cur = await pg.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND classid = %s AND objid = %s AND objsubid = 1",
        (SEASON_LOCK >> 32, SEASON_LOCK & 0xFFFFFFFF),
    )
    row = await cur.fetchone()
    return None if row is None else int(row[0])


async def test_two_instances_archive_each_period_once_and_a_dead_holder_is_taken_over(
    client: httpx.AsyncClient,
    redis: Redis,
    pg: AsyncConnection[Any],
    other: Runtime,
    runtime: Runtime,
) -> None:
    board_id, config, _ = await random_board(client, random.Random(41))
    closed = await closed_periods(client, board_id, config)
    assert len(closed) >= 2
    holder = job(runtime, HeldJob, page_size=5)
    assert isinstance(holder, HeldJob)
    first = asyncio.create_task(holder.run_pass(boards=[board_id]))
    await asyncio.wait_for(holder.entered.wait(), 10)

    # while one instance holds the lease, the other's pass does nothing
    assert (await job(other).run_pass(boards=[board_id])).lease is False
    assert (await job(other).run_pass(boards=[board_id], wait_for_lease_s=0.3)).lease is False

    # the holder's session dies (its host vanished): the lease and its open work go with it
    pid = await lease_holder(pg)
    assert pid is not None
    await pg.execute("SELECT pg_terminate_backend(%s)", (pid,))
    holder.go.set()
    with pytest.raises(psycopg.Error):
        await first
    assert await lease_holder(pg) is None

    # the other instance takes over and archives every period, each exactly once
    report = await job(other).run_pass(boards=[board_id])
    assert report.lease and report.frozen == len(closed)
    rows = await archive_rows(pg, board_id)
    assert set(rows) == {(w, p) for w, p, _ in closed}
    for (window, period), (entries, _, _, copied) in rows.items():
        zcard = await redis.zcard(keys.period_keys(board_id, window, period).public)
        assert entries == copied == zcard

    # and two passes at once archive nothing twice
    second, third = await asyncio.gather(
        job(other).run_pass(boards=[board_id]), job(runtime).run_pass(boards=[board_id])
    )
    assert second.frozen == third.frozen == 0
    assert await archive_rows(pg, board_id) == rows


async def test_concurrent_passes_freeze_each_period_once(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], other: Runtime, runtime: Runtime
) -> None:
    board_id, config, _ = await random_board(client, random.Random(42))
    closed = await closed_periods(client, board_id, config)
    reports = await asyncio.gather(
        *(job(rt).run_pass(boards=[board_id], wait_for_lease_s=5) for rt in (runtime, other) * 2)
    )
    assert all(r.lease for r in reports)  # each waited its turn
    assert sum(r.frozen for r in reports) == len(closed)
    rows = await archive_rows(pg, board_id)
    assert all(entries == copied for entries, _, _, copied in rows.values())


# --- the injected clock crosses the year change ---------------------------------------------


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


async def test_an_injected_clock_freezes_across_day_week_month_and_year(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], redis: Redis, runtime: Runtime
) -> None:
    board_id = new_board_id("year")
    await put_board(
        client,
        board_id,
        {"windows": WINDOWS, "grace_seconds": 3600, "retention_days": dict.fromkeys(WINDOWS, 1)},
    )
    rt = runtime
    board = await rt.boards.get(board_id)

    def run(run_id: str, ended: str, received: str | None = None, score: int = 10) -> Run:
        return Run(run_id, run_id, score, at(ended), at(received or ended))

    runs = [
        run("last-ms-of-2026", "2026-12-31T23:59:59.999"),
        run("first-ms-of-2027", "2027-01-01T00:00:00.000"),
        run("late-in-grace", "2026-12-31T23:00:00", "2027-01-01T00:59:59.999"),
        run("late-after-grace", "2026-12-31T23:30:00", "2027-01-01T01:00:00.000"),
        run("last-ms-of-w53", "2027-01-03T23:59:59.999"),
        run("first-ms-of-w01", "2027-01-04T00:00:00.000"),
    ]
    # applied as the log consumer applies runs received then (their ends are in the future)
    message = LogMessage(0, f"runs.{board_id}", encode_message(board_id, runs))
    assert (await rt.applier.apply([message])).applied == [0]
    assert board.windows == tuple(WINDOWS)

    now = [at("2027-01-01T00:59:59.999")]
    season = job(rt, settle_ms=15_000, clock=lambda: now[0])
    reader = Reader(
        rt.redis.reads,
        rt.names,
        archive=ArchiveStore(rt.pg),
        archive_state_s=0,
        clock=lambda: now[0],
    )

    async def frozen() -> set[tuple[str, str, bool]]:
        return {(w, p, r[2]) for (w, p), r in (await archive_rows(pg, board_id)).items()}

    async def statuses(window: str) -> dict[str, str]:
        listed = await reader.periods(board, window)
        return {p["period"]: p["status"] for p in listed["periods"]}

    async def players(window: str, period: str) -> list[str]:
        top = await reader.top(Scope(board, window, parse_period(window, period)), 100, 0)
        return sorted(e["player_id"] for e in top["entries"])

    assert (
        await season.run_pass(boards=[board_id], wait_for_lease_s=10)
    ).frozen == 0  # inside grace of 12-31
    assert (await statuses("daily"))["2026-12-31"] == "open"
    now[0] = at("2027-01-01T01:00:00")  # grace over, still settling
    assert (await season.run_pass(boards=[board_id], wait_for_lease_s=10)).frozen == 0
    assert (await statuses("daily"))["2026-12-31"] == "closed"
    now[0] = at("2027-01-01T01:00:15")
    assert (await season.run_pass(boards=[board_id], wait_for_lease_s=10)).frozen == 2
    assert await frozen() == {("daily", "2026-12-31", False), ("monthly", "2026-12", False)}
    assert await players("daily", "2026-12-31") == ["last-ms-of-2026", "late-in-grace"]
    assert await players("monthly", "2026-12") == ["last-ms-of-2026", "late-in-grace"]

    now[0] = at("2027-01-02T01:00:15")  # a day of retention later: 2026-12-31 leaves Redis
    report = await season.run_pass(boards=[board_id], wait_for_lease_s=10)
    assert (report.frozen, report.archived) == (1, 2)
    assert await frozen() == {
        ("daily", "2026-12-31", True),
        ("monthly", "2026-12", True),
        ("daily", "2027-01-01", False),
    }
    assert await in_redis(redis, board_id, "daily", "2026-12-31") == 0
    assert (await statuses("daily")) == {
        "2027-01-02": "open",
        "2027-01-01": "closed",
        "2026-12-31": "archived",
        "2027-01-03": "open",
        "2027-01-04": "open",
    }
    assert await players("daily", "2026-12-31") == ["last-ms-of-2026", "late-in-grace"]

    now[0] = at("2027-01-04T01:00:14.999")  # W53 closed, settling
    await season.run_pass(boards=[board_id], wait_for_lease_s=10)
    assert ("weekly", "2026-W53", False) not in await frozen()
    now[0] = at("2027-01-04T01:00:15")
    await season.run_pass(boards=[board_id], wait_for_lease_s=10)
    assert ("weekly", "2026-W53", False) in await frozen()
    assert await players("weekly", "2026-W53") == sorted(
        [
            "last-ms-of-2026",
            "first-ms-of-2027",
            "late-in-grace",
            "late-after-grace",
            "last-ms-of-w53",
        ]
    )
    assert (await statuses("weekly"))["2027-W01"] == "open"
    assert ("weekly", "2027-W01", False) not in await frozen()


# --- the background job and the CLI --------------------------------------------------------


async def test_rankd_serve_runs_the_job_in_the_background(
    urls: Urls, pg: AsyncConnection[Any]
) -> None:
    async with app_client(urls, season_job_interval_s=0.2, season_settle_s=0) as (http, _):
        board_id, config, _ = await random_board(http, random.Random(51), windows=["daily"])
        closed = await closed_periods(http, board_id, config)

        async def frozen() -> bool:
            return len(await archive_rows(pg, board_id)) == len(closed)

        assert await wait_until(frozen, timeout_s=60)  # the pass walks every board
        # the job reads the current config every pass: retention 0 takes effect at once
        await put_board(http, board_id, {"retention_days": {"daily": 0}})

        async def archived() -> bool:
            found = await closed_periods(http, board_id, config)
            return {s for _, _, s in found} == {"archived"}

        assert await wait_until(archived, timeout_s=60)


async def run_cli(urls: Urls, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")} | {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "COLUMNS": "200",
    }
    with tempfile.TemporaryDirectory(prefix="rankd-cli-") as cwd:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "rankd.cli",
            *args,
            env=env,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cli_freeze_runs_one_pass_and_summarises_it(
    client: httpx.AsyncClient, urls: Urls, pg: AsyncConnection[Any]
) -> None:
    board_id, config, players = await random_board(client, random.Random(61))
    closed = await closed_periods(client, board_id, config)
    live = await every_read(client, board_id, config, players)

    code, out, err = await run_cli(urls, "freeze", "--board", board_id)
    assert code == 0, out + err
    found = re.search(
        r"froze (\d+) periods, (\d+) entries archived in [0-9.]+s \(([0-9,]+) entries/s\)", out
    )
    assert found, out
    rows = await archive_rows(pg, board_id)
    assert int(found[1]) == len(closed) == len(rows)
    assert int(found[2]) == sum(r[0] for r in rows.values())
    assert "Traceback" not in out + err
    assert await every_read(client, board_id, config, players) == live

    code, out, _ = await run_cli(urls, "freeze", "--board", board_id)
    assert code == 0 and "froze 0 periods, 0 entries archived" in out
