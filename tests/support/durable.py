"""Helpers shared by the durable-copy tests (applier, rebuild, replay).

They read a board's whole state straight from Redis and PostgreSQL, submit runs through the
API, and wait for the log consumer to be idle (the session app's, or a `rankd serve`'s in
test_failures).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

import httpx
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.codec import member, player_of
from rankd.runtime import Runtime
from rankd.services.consumer import applied_through
from rankd.stores.redis import keys
from tests.support.common import SERVER_H, zmembers, zscored
from tests.support.wire import iso

# (window, period) -> {player: composite}
BoardState = dict[tuple[str, str], dict[str, int]]
# player_best: (window, period, player) -> (composite, score, achieved_ms, run_id)
PgBest = dict[tuple[str, str, str], tuple[int, int, int, str]]
# a sum_runs row: (window, period, player, run_id, score, ended_ms)
SumRun = tuple[str, str, str, str, int, int]


async def submit(
    client: httpx.AsyncClient,
    board_id: str,
    run_id: str,
    player_id: str,
    score: int,
    ended: datetime,
) -> dict[str, Any]:
    body = {"run_id": run_id, "player_id": player_id, "score": score, "ended_at": iso(ended)}
    response = await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


# Tests shard boards over at most this many shards: the helpers look at every possible key.
MAX_TEST_SHARDS = 16


def every_shard(board_id: str, window: str, period: str) -> list[keys.PeriodKeys]:
    """The keys of a period on an unsharded board and on every shard a test board may have."""
    return [keys.period_keys(board_id, window, period, "", k) for k in range(-1, MAX_TEST_SHARDS)]


def ranked(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The (window, period) pairs a submit response says the run was applied to."""
    return [(s["window"], s["period"]) for s in result["standings"] if s["status"] == "ranked"]


async def redis_state(redis: Redis, board_id: str, windows: list[str]) -> BoardState:
    """Every period the board's periods index lists, with each player's composite."""
    state: BoardState = {}
    for window in windows:
        for raw in zmembers(await redis.zrange(keys.periods_index(board_id, window), 0, -1)):
            period = raw.decode()
            found: dict[str, int] = {}
            for pk in every_shard(board_id, window, period):
                members = zscored(await redis.zrange(pk.public, 0, -1, withscores=True))
                found.update({player_of(m.decode()): int(s) for m, s in members})
            state[(window, period)] = found
    return state


async def zscore_of(redis: Redis, key: str, player: str) -> float | None:
    """A player's composite on the sorted set ``key``, found as the scripts find it: the
    member from the exact time kept beside the key (lua/lib.lua locate)."""
    at = await redis.hget(keys.times(key, player), player)
    return await redis.zscore(key, member(player, int(at or 0)))


async def redis_runs(redis: Redis, board_id: str, windows: list[str]) -> BoardState:
    """A sum board's counted-run sets ("<player>|<run_id>" -> ended_at ms) per period."""
    state: BoardState = {}
    for window in windows:
        for raw in zmembers(await redis.zrange(keys.periods_index(board_id, window), 0, -1)):
            period = raw.decode()
            runs: dict[str, int] = {}
            for pk in every_shard(board_id, window, period):
                members = zscored(await redis.zrange(pk.runs, 0, -1, withscores=True))
                runs.update({m.decode(): int(s) for m, s in members})
            state[(window, period)] = runs
    return state


async def pg_best(conn: AsyncConnection[Any], board_id: str) -> PgBest:
    """player_best rows: (window, period, player) -> (composite, score, achieved_ms, run_id)."""
    cur = await conn.execute(
        "SELECT win, period, player_id, composite, score, achieved_ms, run_id"
        " FROM player_best WHERE board_id = %s",
        (board_id,),
    )
    return {(r[0], r[1], r[2]): tuple(r[3:]) for r in await cur.fetchall()}


async def pg_best_at(postgres_url: str, board_id: str) -> PgBest:
    """pg_best on a connection of its own (for a service in another process)."""
    async with await AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        return await pg_best(conn, board_id)


async def pg_composites(conn: AsyncConnection[Any], board_id: str) -> BoardState:
    state: BoardState = {}
    for (window, period, player), row in (await pg_best(conn, board_id)).items():
        state.setdefault((window, period), {})[player] = row[0]
    return state


async def pg_sum_runs(conn: AsyncConnection[Any], board_id: str) -> set[SumRun]:
    cur = await conn.execute(
        "SELECT win, period, player_id, run_id, score, ended_ms FROM sum_runs WHERE board_id = %s",
        (board_id,),
    )
    return {tuple(r) for r in await cur.fetchall()}


async def pg_snapshot(conn: AsyncConnection[Any], board_id: str) -> dict[str, Any]:
    cur = await conn.execute(
        "SELECT win, period, start_ms FROM periods_seen WHERE board_id = %s", (board_id,)
    )
    return {
        "best": await pg_best(conn, board_id),
        "sum_runs": await pg_sum_runs(conn, board_id),
        "periods": {tuple(r) for r in await cur.fetchall()},
    }


async def wait_until(
    check: Callable[[], Awaitable[bool]], timeout_s: float = 10.0, step_s: float = 0.05
) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if await check():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(step_s)


async def wait_consumer_idle(
    http: httpx.AsyncClient, runtime: Runtime | None = None, within_s: float = 60.0
) -> float:
    """Until /readyz is 200 and says the log consumer has nothing pending or unacked (acks
    follow the PostgreSQL commit); returns the seconds it took. The bound is generous: it
    costs nothing when the consumer is idle, and a loaded machine (the whole suite on two
    cores) can take many seconds for a few runs.

    /readyz reports the lag of the consumer's latest refresh, which runs only every 2 s. Given
    the ``runtime`` of an app in this process, the lag is refreshed here before each look, so
    one answer where the live consumer info and the endpoint both say idle settles it, with
    nothing in the log past the consumer's ack floor (a replicated log acknowledges a publish
    before the consumer's server counts it). A service in another process is watched through
    /readyz alone, which must then say idle for 2.5 s in a row.
    """
    started = time.monotonic()
    idle_since: float | None = None
    last: Any = None
    while True:
        refreshed_idle = True
        if runtime is not None:
            assert runtime.consumer is not None
            lag = await runtime.consumer.refresh_lag()
            refreshed_idle = not (lag.pending or lag.ack_pending)
            if refreshed_idle:
                refreshed_idle = await applied_through(runtime.runlog) is None
        response: httpx.Response | None
        try:
            response = await http.get("/readyz")
            last = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            response, last = None, repr(exc)
        reported = last.get("consumer") if isinstance(last, dict) else None
        if (
            refreshed_idle
            and response is not None
            and response.status_code == 200
            and reported
            and reported["pending"] == 0
            and reported["ack_pending"] == 0
        ):
            idle_since = idle_since or time.monotonic()
            if runtime is not None or time.monotonic() - idle_since >= 2.5:
                return time.monotonic() - started
        else:
            idle_since = None
        if time.monotonic() - started >= within_s:
            raise AssertionError(f"log consumer did not catch up within {within_s}s: {last}")
        await asyncio.sleep(0.05 if runtime is not None else 0.25)


async def delete_board_keys(
    redis: Redis, board_id: str, windows: list[str], *, runs: bool = True
) -> int:
    """Delete the public key (and counted-runs key) of every indexed period, and the indexes."""
    doomed: list[str] = []
    for window in windows:
        index = keys.periods_index(board_id, window)
        for raw in zmembers(await redis.zrange(index, 0, -1)):
            for pk in every_shard(board_id, window, raw.decode()):
                doomed.append(pk.public)
                if runs:
                    doomed.append(pk.runs)
        doomed.append(index)
    return int(await redis.delete(*doomed)) if doomed else 0


async def staging_keys(redis: Redis, board_id: str) -> list[bytes]:
    return [k async for k in redis.scan_iter(match=f"lb:{{{board_id}:*rebuild*", count=1000)]


async def all_reads(
    client: httpx.AsyncClient, board_id: str, windows: list[str]
) -> dict[tuple[str, ...], Any]:
    """Every read of every period of every window: periods, top, each player, around."""
    reads: dict[tuple[str, ...], Any] = {}
    base = f"/v1/boards/{board_id}"
    for window in windows:
        listing = await client.get(f"{base}/periods", params={"window": window})
        assert listing.status_code == 200, listing.text
        reads[("periods", window)] = listing.json()
        for item in listing.json()["periods"]:
            scope = {"window": window, "period": item["period"]}
            top = await client.get(f"{base}/top", params={**scope, "n": 1000})
            assert top.status_code == 200, top.text
            reads[("top", window, item["period"])] = top.json()
            for entry in top.json()["entries"]:
                player = entry["player_id"]
                one = await client.get(f"{base}/players/{player}", params=scope)
                near = await client.get(
                    f"{base}/players/{player}/around", params={**scope, "range": 2}
                )
                reads[("player", window, item["period"], player)] = (one.status_code, one.json())
                reads[("around", window, item["period"], player)] = (near.status_code, near.json())
    return reads


async def wipe_board(redis: Redis, board_id: str) -> None:
    """Redis loses every key of the board (entries, side keys, admission, leagues)."""
    for pattern in keys.board_patterns(board_id):
        async for key in redis.scan_iter(match=pattern):
            await redis.unlink(key)


class Settles(Protocol):
    settle_s: float


async def during_second_sweep(
    runtime: Runtime,
    settles: Settles,
    player: str,
    *,
    act: Callable[[], Awaitable[None]],
    new_run: Callable[[], Awaitable[None]],
    committed: Callable[[], Awaitable[bool]],
) -> list[bool]:
    """``act`` (an erasure or an entry removal of ``player``), whose second sweep comes
    0.2 s later; ``new_run`` is sent between that sweep's read of the durable copy and its
    drop from Redis, and the drop waits up to 4 s for the log consumer to apply it
    (``committed``). Returns [whether it did]: under the apply lock it cannot."""
    real_drop = runtime.redis.moves.drop_entries
    sweeps: list[bool] = []
    calls = 0

    async def new_run_then_drop(refs: Any, players: Any) -> int:
        nonlocal calls
        calls += player in players
        if player in players and calls == 2:  # the second sweep: it has read the copy
            await new_run()
            sweeps.append(await wait_until(committed, timeout_s=4, step_s=0.1))
        return await real_drop(refs, players)

    settle_s, settles.settle_s = settles.settle_s, 0.2
    runtime.redis.moves.drop_entries = new_run_then_drop  # type: ignore[method-assign,assignment]
    try:
        await act()
        assert await wait_until(lambda: asyncio.sleep(0, bool(sweeps)), timeout_s=10)
    finally:
        settles.settle_s = settle_s
        del runtime.redis.moves.drop_entries
    return sweeps
