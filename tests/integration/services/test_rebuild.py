"""Rebuilding Redis boards from PostgreSQL: reads come back the same, nothing acked is lost.

Rebuilds here name their board, except the watchdog's, which restores every board in the
shared test database (all of them consistent, so that is harmless to other tests).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.periods import ALL_TIME, PeriodRef, parse_period
from rankd.runtime import Runtime
from rankd.services.rebuild import Rebuilder
from rankd.services.rebuild.restart import CHANGE_MARGIN_MS
from rankd.stores.redis import keys
from rankd.stores.redis import staging as loads
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id, zmembers
from tests.support.durable import (
    all_reads,
    delete_board_keys,
    every_shard,
    pg_best,
    pg_composites,
    pg_sum_runs,
    ranked,
    redis_runs,
    redis_state,
    staging_keys,
    submit,
    wait_consumer_idle,
    wait_until,
    zscore_of,
)
from tests.support.wire import ago, iso, ms

ALL_WINDOWS = ["all-time", "daily", "weekly", "monthly"]
TEN_DAYS_S = 10 * 86_400


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    """Every board here is unsharded, then split over 4 shards: a rebuild restores both."""
    return make_sharded_board


async def populate(client: httpx.AsyncClient, board_id: str, runs: int = 36) -> None:
    """Runs from eight players over the last five days (several periods per window)."""
    rng = random.Random(board_id)
    for i in range(runs):
        minutes = rng.randrange(1, 5 * 24 * 60)
        await submit(
            client,
            board_id,
            f"run-{i}",
            f"p{i % 8}",
            rng.randrange(1, 900_000),
            ago(minutes=minutes),
        )


async def ttls(redis: Redis, board_id: str, windows: list[str]) -> dict[str, int]:
    found = {}
    for window in windows:
        for raw in zmembers(await redis.zrange(keys.periods_index(board_id, window), 0, -1)):
            for pk in every_shard(board_id, window, raw.decode()):
                if await redis.exists(pk.public):
                    found[pk.public] = int(await redis.pttl(pk.public))
    return found


async def test_rebuild_restores_every_read_of_a_best_board(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    board_id = await make_board(windows=ALL_WINDOWS, grace_seconds=TEN_DAYS_S)
    bystander = await make_board(windows=["all-time", "daily"])
    await populate(client, board_id)
    await populate(client, bystander, runs=6)
    await wait_consumer_idle(client, runtime)

    reads = await all_reads(client, board_id, ALL_WINDOWS)
    raw = await redis_state(redis, board_id, ALL_WINDOWS)
    other = await redis_state(redis, bystander, ["all-time", "daily"])
    assert sum(1 for k in raw if k[0] == "daily") >= 3  # several periods per window
    assert await delete_board_keys(redis, board_id, ALL_WINDOWS) > 0
    assert await redis_state(redis, board_id, ALL_WINDOWS) == {}
    gone = await client.get(f"/v1/boards/{board_id}/top", params={"window": ALL_TIME})
    assert gone.json()["total"] == 0

    report = await runtime.rebuilder.rebuild(board=board_id)
    assert report is not None
    assert report.periods == len(raw)
    assert report.members == sum(len(m) for m in raw.values())
    assert report.skipped == []
    assert await redis_state(redis, board_id, ALL_WINDOWS) == raw
    assert await all_reads(client, board_id, ALL_WINDOWS) == reads
    assert await redis_state(redis, bystander, ["all-time", "daily"]) == other


async def test_rebuild_sets_no_ttls_and_leaves_no_staging_keys(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    """Period keys carry no TTL, written or rebuilt: the season job removes them once their
    period is archived (services/seasons.py)."""
    board_id = await make_board(windows=ALL_WINDOWS, grace_seconds=TEN_DAYS_S, policy="sum")
    await populate(client, board_id, runs=16)
    best_id = await make_board(windows=ALL_WINDOWS, grace_seconds=TEN_DAYS_S)
    await populate(client, best_id, runs=16)
    await wait_consumer_idle(client, runtime)

    for board in (board_id, best_id):
        before = await ttls(redis, board, ALL_WINDOWS)
        assert before and set(before.values()) == {-1}, before
        await delete_board_keys(redis, board, ALL_WINDOWS)
        await runtime.rebuilder.rebuild(board=board)
        assert await ttls(redis, board, ALL_WINDOWS) == before
        assert await staging_keys(redis, board) == []

    for window in ALL_WINDOWS:  # nor do a sum board's counted-run sets
        for raw in zmembers(await redis.zrange(keys.periods_index(board_id, window), 0, -1)):
            found = {
                await redis.pttl(pk.runs) for pk in every_shard(board_id, window, raw.decode())
            }
            assert -1 in found and found <= {-1, -2}  # no TTL; -2: no such shard key


async def test_rebuild_of_a_sum_board_restores_counted_runs(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    windows = ["all-time", "daily", "weekly"]
    board_id = await make_board(windows=windows, policy="sum")
    sent = []
    for i in range(20):
        body = (f"s-{i}", f"p{i % 5}", 3 + i, ago(minutes=60 - i))
        sent.append(body)
        await submit(client, board_id, *body)
    await wait_consumer_idle(client, runtime)
    reads = await all_reads(client, board_id, windows)
    raw = await redis_state(redis, board_id, windows)
    counted = await redis_runs(redis, board_id, windows)
    durable = await pg_sum_runs(pg, board_id)
    assert sum(len(c) for c in counted.values()) >= 40

    await delete_board_keys(redis, board_id, windows)
    await runtime.rebuilder.rebuild(board=board_id)
    assert await staging_keys(redis, board_id) == []
    assert await redis_runs(redis, board_id, windows) == counted

    # resending runs that were counted before the rebuild counts nothing
    for body in sent[:5]:
        result = await submit(client, board_id, *body)
        assert [s["improved"] for s in result["standings"]] == [False] * len(windows)
        assert all(s["is_best"] for s in result["standings"])
    await wait_consumer_idle(client, runtime)
    assert await pg_sum_runs(pg, board_id) == durable
    assert await redis_runs(redis, board_id, windows) == counted

    # and every total and read is what it was (the composites come from player_best)
    assert await redis_state(redis, board_id, windows) == raw
    assert await all_reads(client, board_id, windows) == reads


async def test_rebuild_while_submits_flow_keeps_every_acknowledged_run(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    windows = ["all-time", "daily"]
    board_id = await make_board(windows=windows)
    board = await runtime.boards.get(board_id)
    await populate(client, board_id, runs=10)
    await wait_consumer_idle(client, runtime)

    acked: list[tuple[str, int, int, list[tuple[str, str]]]] = []
    done = asyncio.Event()
    rebuilds = 0

    async def submitter(worker: int) -> None:
        rng = random.Random(worker)
        for i in range(40):
            player, score, ended = (
                f"c{rng.randrange(10)}",
                rng.randrange(1, 10**6),
                ago(seconds=rng.randrange(1, 900)),
            )
            body = {
                "run_id": f"w{worker}-{i}",
                "player_id": player,
                "score": score,
                "ended_at": iso(ended),
            }
            response = await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
            while response.status_code == 503:  # a period being swapped in: retry, same run
                await asyncio.sleep(0.01)
                response = await client.post(
                    f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H
                )
            if response.status_code == 200:
                acked.append((player, score, ms(ended), ranked(response.json())))

    async def rebuilder() -> None:
        nonlocal rebuilds
        while not done.is_set():
            await runtime.rebuilder.rebuild(board=board_id)
            rebuilds += 1
            await asyncio.sleep(0.01)

    async def submitters() -> None:
        await asyncio.gather(*(submitter(w) for w in range(4)))
        done.set()

    await asyncio.gather(submitters(), rebuilder())
    assert len(acked) == 160
    assert rebuilds >= 2
    await wait_consumer_idle(client, runtime)

    # every acknowledged run is reflected: each c-player's entry is the max over their acked
    # runs (populate()'s players are p0..p7, untouched by the loop)
    wanted: dict[tuple[str, str], dict[str, int]] = {}
    for player, score, ended_ms, pairs in acked:
        for window, period in pairs:
            start = parse_period(window, period).start_ms
            composite = board.codecs[window].pack(score, ended_ms - start)
            entries = wanted.setdefault((window, period), {})
            entries[player] = max(entries.get(player, 0), composite)
    state = await redis_state(redis, board_id, windows)
    flowing = {k: {p: c for p, c in v.items() if p.startswith("c")} for k, v in state.items()}
    assert {k: v for k, v in flowing.items() if v} == wanted
    assert await pg_composites(pg, board_id) == state


class _RedisSpy:
    """Redis for a Rebuilder, which runs ``hook`` once, right after a command (or a
    MULTI/EXEC pipeline) that renames a period's counted-runs set into place."""

    def __init__(self, redis: Redis, hook: Callable[[], Awaitable[None]]) -> None:
        self._redis = redis
        self.hook: Callable[[], Awaitable[None]] | None = hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self._redis, name)

    async def fire(self) -> None:
        if self.hook is not None:
            hook, self.hook = self.hook, None
            await hook()

    async def rename(self, src: Any, dst: Any) -> Any:
        result = await self._redis.rename(src, dst)
        if str(dst).endswith(":runs"):
            await self.fire()
        return result

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipe = self._redis.pipeline(*args, **kwargs)
        execute = pipe.execute

        async def spied(*a: Any, **kw: Any) -> Any:
            swaps_runs = any(
                str(command[0]).upper() == "RENAME" and str(command[-1]).endswith(":runs")
                for command, _ in pipe.command_stack
            )
            result = await execute(*a, **kw)
            if swaps_runs:
                await self.fire()
            return result

        # a spy on this one pipeline's execute (mypy forbids assigning to a method)
        pipe.execute = spied  # type: ignore[method-assign]
        return pipe


async def test_sum_rebuild_keeps_a_run_submitted_during_the_swap(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    """Submits do not take the apply lock, so one may land right after a sum period's
    counted-runs set is swapped in. The run must still be on the board once the consumer
    has applied it: swapping the counted set apart from the public key would leave the run
    counted (so the consumer skips it) but not added (the public key swapped in after)."""
    board_id = await make_board(windows=[ALL_TIME], policy="sum")
    for i in range(6):
        await submit(client, board_id, f"base-{i}", f"p{i % 3}", 10 + i, ago(minutes=10 - i))
    await wait_consumer_idle(client, runtime)
    results: list[dict[str, Any]] = []

    async def late_submit() -> None:
        results.append(await submit(client, board_id, "late-run", "newcomer", 77, ago(seconds=1)))

    spy = _RedisSpy(runtime.redis.client, late_submit)
    real, runtime.redis.conn.client = runtime.redis.conn.client, spy  # type: ignore[assignment]
    try:
        await Rebuilder(runtime.redis, runtime.pg, runtime.boards).rebuild(board=board_id)
    finally:
        runtime.redis.conn.client = real
    await spy.fire()  # a rebuild that never renamed a counted-runs set: submit afterwards
    assert results and results[0]["standings"][0]["score"] == 77
    await wait_consumer_idle(client, runtime)

    rows = await pg_best(pg, board_id)
    assert rows[(ALL_TIME, ALL_TIME, "newcomer")][1] == 77
    shard = keys.shard_of("newcomer", runtime.redis.shards.of(board_id))
    pk = keys.period_keys(board_id, ALL_TIME, ALL_TIME, "", shard)
    assert await redis.zscore(pk.runs, "newcomer|late-run") is not None
    held = await zscore_of(redis, pk.public, "newcomer")
    board = await runtime.boards.get(board_id)
    assert held is not None, "the run is in the counted set but not on the board"
    assert board.codecs[ALL_TIME].unpack(int(held))[0] == 77


# A watchdog's rebuild restores every board of the shared test database: in the full suite
# some 30,000 members (the oracle's sharded boards among them), about 10 s on a quiet
# machine and over a minute on a loaded one. A test that gave up early left the rebuild
# running, and every later test here failed waiting for the consumer behind it.
WHOLE_REBUILD_S = 180.0


async def _metric(client: httpx.AsyncClient, name: str) -> float:
    text = (await client.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return 0.0


def _restored(
    runtime: Runtime, redis: Redis, run_id: str, timeout_s: float
) -> Coroutine[Any, Any, bool]:
    """Awaits a restore begun after this call: the marker names this Redis again *and* the
    restorer has recorded a new report. The rebuild marks the node verified before it
    returns, so the marker alone can be seen while ``restorer.last`` still holds an earlier
    report (seen once in CI). Call it before breaking the marker."""
    before = runtime.restorer.last

    async def done() -> bool:
        marked = await redis.get(keys.VERIFIED_MARKER) == run_id.encode()
        return marked and runtime.restorer.last is not before

    return wait_until(done, timeout_s=timeout_s)


async def test_watchdog_rebuilds_when_the_redis_run_id_changes(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    await populate(client, board_id, runs=8)
    await wait_consumer_idle(client, runtime)
    reads = await all_reads(client, board_id, ["all-time", "daily"])
    real_run_id = str((await redis.info("server"))["run_id"])
    assert await redis.get(keys.VERIFIED_MARKER) == real_run_id.encode()
    rebuilt_before = await _metric(client, "rankd_rebuilds_total")

    # no recorded log position (as on a wiped Redis): a rebuild from PostgreSQL
    await redis.delete(keys.LOG_POSITION)
    restored = _restored(runtime, redis, real_run_id, WHOLE_REBUILD_S)
    await redis.set(keys.VERIFIED_MARKER, "not-this-redis")

    # every board of the shared test database is rebuilt: by now it holds the oracle's
    # sharded boards, whose periods are finished a shard at a time (docs/giant-boards.md)
    assert await restored, "the watchdog did not rebuild"
    assert await _metric(client, "rankd_rebuilds_total") > rebuilt_before
    assert await all_reads(client, board_id, ["all-time", "daily"]) == reads
    assert runtime.restorer.last is not None and runtime.restorer.last.how == "rebuild"


async def test_watchdog_replays_only_the_tail_when_the_log_position_is_readable(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    await populate(client, board_id, runs=8)
    await wait_consumer_idle(client, runtime)
    reads = await all_reads(client, board_id, ["all-time", "daily"])
    real_run_id = str((await redis.info("server"))["run_id"])

    since_ms = int(time.time() * 1000)

    async def recorded() -> bool:  # a position written after this test began
        return int(await redis.hget(keys.LOG_POSITION, "at_ms") or 0) > since_ms

    assert await wait_until(recorded, timeout_s=30.0), "no log position recorded"
    rebuilt_before = await _metric(client, "rankd_rebuilds_total")
    # bans made by earlier tests in this session are not this restart's business
    runtime.restorer.change_margin_ms = 0
    restored = _restored(runtime, redis, real_run_id, 30.0)
    await redis.set(keys.VERIFIED_MARKER, "not-this-redis")

    try:
        assert await restored, "the watchdog did not restore in 30 s"
    finally:
        runtime.restorer.change_margin_ms = CHANGE_MARGIN_MS
    assert await _metric(client, "rankd_rebuilds_total") == rebuilt_before
    assert runtime.restorer.last is not None and runtime.restorer.last.how == "tail"
    assert await all_reads(client, board_id, ["all-time", "daily"]) == reads


async def test_missing_mode_restores_only_periods_whose_key_is_gone(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    await populate(client, board_id, runs=12)
    await wait_consumer_idle(client, runtime)
    raw = await redis_state(redis, board_id, ["all-time", "daily"])
    all_time = [pk.public for pk in every_shard(board_id, ALL_TIME, ALL_TIME)]
    assert await redis.delete(*all_time) >= 1

    report = await runtime.rebuilder.rebuild(board=board_id, when="missing")
    assert report is not None
    assert report.periods == 1  # the daily periods were still there
    assert await redis_state(redis, board_id, ["all-time", "daily"]) == raw


async def test_names_are_restored_into_redis_from_postgresql(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    board_id = await make_board()
    player = f"named-{board_id}"
    await submit(client, board_id, "r1", player, 5, ago(minutes=1))
    response = await client.put(
        f"/v1/players/{player}", json={"name": "kai_runs"}, headers=SERVER_H
    )
    assert response.status_code == 200
    assert await redis.hget(keys.NAMES, player) == b"kai_runs"
    await redis.delete(keys.NAMES)

    await runtime.rebuilder.rebuild(when="missing")
    assert await redis.hget(keys.NAMES, player) == b"kai_runs"
    runtime.names._cache.clear()  # as a fresh process would start
    top = (await client.get(f"/v1/boards/{board_id}/top")).json()
    assert top["entries"][0]["name"] == "kai_runs"


async def segment_tops(
    client: httpx.AsyncClient, board_id: str, windows: list[str], values: list[str]
) -> dict[tuple[str, str, str], Any]:
    """Every segment's top list (with exact times) of every period of every window."""
    found: dict[tuple[str, str, str], Any] = {}
    base = f"/v1/boards/{board_id}"
    for window in windows:
        listing = await client.get(f"{base}/periods", params={"window": window})
        for item in listing.json()["periods"]:
            for value in values:
                params = {"window": window, "period": item["period"], "n": 1000}
                top = await client.get(f"{base}/top", params={**params, "segment": f"c:{value}"})
                assert top.status_code == 200, top.text
                found[(window, item["period"], value)] = top.json()
    return found


async def test_many_small_periods_are_restored_in_batches_exactly(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    """Small periods (here every one, global and per segment) take the batched path: a
    query and a round trip for many periods. Every read comes back as it was, exact times
    included, and the report counts every period and member."""
    board_id = await make_board(windows=ALL_WINDOWS, grace_seconds=TEN_DAYS_S, segments=["c"])
    values = ["aa", "bb", "cc"]
    rng = random.Random(board_id)
    for i in range(40):
        minutes = rng.randrange(1, 5 * 24 * 60)
        body = {
            "run_id": f"seg-{i}",
            "player_id": f"p{i % 9}",
            "score": rng.randrange(1, 900_000),
            "ended_at": iso(ago(minutes=minutes)),
            "segments": {"c": values[i % 3]},
        }
        response = await client.post(f"/v1/boards/{board_id}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200, response.text
    await wait_consumer_idle(client, runtime)
    reads = await all_reads(client, board_id, ALL_WINDOWS)
    segments = await segment_tops(client, board_id, ALL_WINDOWS, values)
    raw = await redis_state(redis, board_id, ALL_WINDOWS)
    await delete_board_keys(redis, board_id, ALL_WINDOWS)

    report = await runtime.rebuilder.rebuild(board=board_id)
    assert report is not None
    global_members = sum(len(m) for m in raw.values())
    segment_members = sum(len(t["entries"]) for t in segments.values())
    assert report.members == global_members + segment_members
    assert report.periods > len(raw)  # segments' periods too
    assert runtime.rebuilder.restoring == set()
    assert await redis_state(redis, board_id, ALL_WINDOWS) == raw
    assert await all_reads(client, board_id, ALL_WINDOWS) == reads
    assert await segment_tops(client, board_id, ALL_WINDOWS, values) == segments
    assert await staging_keys(redis, board_id) == []


async def test_a_period_still_being_restored_answers_503_and_the_others_are_served(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    await submit(client, board_id, "r-1", "p1", 10, ago(minutes=1))
    today = (await client.get(f"/v1/boards/{board_id}/top", params={"window": "daily"})).json()
    restoring = PeriodRef(board_id, "daily", today["period"], "")
    runtime.rebuilder.restoring = {restoring}
    try:
        for path in ("top", "players/p1", "players/p1/around"):
            refused = await client.get(f"/v1/boards/{board_id}/{path}", params={"window": "daily"})
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "unavailable"
            assert "restored" in refused.json()["error"]["message"]
        served = await client.get(f"/v1/boards/{board_id}/top", params={"window": "all-time"})
        assert served.status_code == 200 and served.json()["total"] == 1
    finally:
        runtime.rebuilder.restoring = set()
    assert (
        await client.get(f"/v1/boards/{board_id}/top", params={"window": "daily"})
    ).json() == today


async def test_a_ban_since_the_log_position_means_a_rebuild_not_a_tail_replay(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    """A ban reaches Redis outside the log (PostgreSQL first, then Redis): one made since
    the recorded position may be in the AOF's lost last second, so the tail cannot do."""
    board_id = await make_board(windows=["all-time"])
    await populate(client, board_id, runs=4)
    await wait_consumer_idle(client, runtime)
    real_run_id = str((await redis.info("server"))["run_id"])

    async def recorded() -> bool:
        return await redis.hget(keys.LOG_POSITION, "seq") is not None

    assert await wait_until(recorded, timeout_s=30.0), "no log position recorded"
    player = f"banned-{random.randrange(10**9)}"
    response = await client.post(f"/v1/players/{player}/ban", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    try:
        restored = _restored(runtime, redis, real_run_id, WHOLE_REBUILD_S)
        await redis.set(keys.VERIFIED_MARKER, "not-this-redis")
        # a whole rebuild: in the full suite the shared database holds every test's boards
        assert await restored, "not restored"
        last = runtime.restorer.last
        assert last is not None and last.how == "rebuild", last
        assert "a ban or unban" in last.reason, last.reason
    finally:
        await client.delete(f"/v1/players/{player}/ban", headers=ADMIN_H)


@pytest.mark.parametrize("shards", [1, 2], ids=["unsharded-staged", "shards2"])
async def test_a_submit_between_the_times_load_and_the_swap_leaves_one_entry(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    monkeypatch: pytest.MonkeyPatch,
    shards: int,
) -> None:
    """A staged rebuild writes PostgreSQL's exact times into the live hashes, then swaps its
    copy in. A submit improving an entry in between pointed the player's time at a member the
    swapped-in key does not hold: the consumer's re-apply (the swap drops the marks) then
    added a second member for the player, for good. The period's writes are refused until
    the swap instead (503; the retry and the consumer apply the run after it)."""
    from rankd.services.rebuild import small as rebuild_module

    monkeypatch.setattr(rebuild_module, "SMALL_PERIOD", 0)  # the staged path, unsharded too
    board_id = new_board_id()
    body = {"shards": shards, "windows": [ALL_TIME]}
    response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    await submit(client, board_id, "a1", "pA", 100, ago(minutes=5))
    await submit(client, board_id, "b1", "pB", 50, ago(minutes=5))
    await wait_consumer_idle(client, runtime)

    answers: list[int] = []
    ended = ago(minutes=1)
    real_swap = loads.swap

    async def swap_after_a_submit(*args: Any, **kwargs: Any) -> None:
        if not answers:
            run = {"run_id": "a2", "player_id": "pA", "score": 200, "ended_at": iso(ended)}
            answer = await client.post(f"/v1/boards/{board_id}/runs", json=run, headers=SERVER_H)
            answers.append(answer.status_code)
        await real_swap(*args, **kwargs)

    monkeypatch.setattr(loads, "swap", swap_after_a_submit)
    await runtime.rebuilder.rebuild(board=board_id, window=ALL_TIME)
    monkeypatch.undo()
    assert answers and answers[0] in (200, 503)
    if answers[0] == 503:  # refused while restoring: the retry is idempotent
        await submit(client, board_id, "a2", "pA", 200, ended)
    await wait_consumer_idle(client, runtime)
    await submit(client, board_id, "a3", "pA", 300, ago(seconds=30))
    await wait_consumer_idle(client, runtime)

    members = []
    for pk in every_shard(board_id, ALL_TIME, ALL_TIME):
        members += [m.decode()[7:] for m in zmembers(await redis.zrange(pk.public, 0, -1))]
    assert sorted(members) == ["pA", "pB"], "one entry per player"
    top = (await client.get(f"/v1/boards/{board_id}/top", params={"window": ALL_TIME})).json()
    assert top["total"] == 2
    assert [(e["player_id"], e["score"]) for e in top["entries"]] == [("pA", 300), ("pB", 50)]
    assert await pg_composites(pg, board_id) == await redis_state(redis, board_id, [ALL_TIME])


@pytest.mark.parametrize("shards", [1, 4], ids=lambda n: f"shards{n}")
async def test_a_torn_period_is_rebuilt_by_the_service_that_meets_it(
    client: httpx.AsyncClient, runtime: Runtime, redis: Redis, shards: int
) -> None:
    """A rebuild that died between its first exact time and its swap leaves the period's
    torn mark (stores/redis/leases.py). The next write answers 503, and the service rebuilds
    the period itself: a small period through the batched path (load_period.lua clears the
    mark too), a sharded one shard by shard."""
    board = new_board_id("torn")
    # segments: a repair of the period then takes several standings, small ones batched
    config = {"windows": ["all-time"], "shards": shards, "segments": ["country"]}
    created = await client.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
    assert created.status_code == 201, created.text
    for i in range(20):
        run = {"run_id": f"t{i}", "player_id": f"p{i}", "score": 100 + i}
        run["segments"] = {"country": "FR" if i % 2 else "DE"}
        sent = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert sent.status_code == 200, sent.text
    await wait_consumer_idle(client, runtime)
    # the shard the next run goes to: what a killed rebuild leaves, its lease gone
    pk = keys.period_keys(board, "all-time", "all-time", "", keys.shard_of("p-after", shards))
    await redis.set(keys.torn(pk.public), b"1")
    body = {"run_id": "after", "player_id": "p-after", "score": 7}
    first = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert first.status_code == 503, first.text
    deadline = time.monotonic() + 30
    while (
        answer := await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    ).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        await asyncio.sleep(0.1)
    assert not await redis.exists(keys.torn(pk.public))
    # a sharded repair may still be finishing the other shards, whose reads answer 503 till then
    assert await wait_until(lambda: _no_repairs(runtime)), runtime.repairs.describe()
    top = await client.get(f"/v1/boards/{board}/top", params={"n": 100})
    assert top.status_code == 200, top.text
    assert top.json()["total"] == 21


async def _no_repairs(runtime: Runtime) -> bool:
    return not runtime.repairs.describe()


async def test_a_period_whose_every_run_is_held_is_rebuilt_for_the_players_own_views(
    client: httpx.AsyncClient, runtime: Runtime, make_board: MakeBoard, redis: Redis
) -> None:
    """No entry yet (every run waits for review), so no period in PostgreSQL's list of
    periods with entries: the holds alone say the :pending key must come back."""
    board_id = await make_board(windows=["all-time", "weekly"], hold_top=1)
    await submit(client, board_id, "h1", "p1", 50, ago(minutes=1))
    await submit(client, board_id, "h2", "p2", 70, ago(minutes=1))
    await wait_consumer_idle(client, runtime)
    path = f"/v1/boards/{board_id}/top"

    async def own_views() -> list[Any]:
        found = []
        for viewer in ("p1", "p2"):
            for window in ("all-time", "weekly"):
                params = {"viewer": viewer, "window": window}
                found.append((await client.get(path, params=params, headers=ADMIN_H)).json())
        return found

    before = await own_views()
    assert [view["total"] for view in before] == [1, 1, 1, 1]
    assert (await client.get(path)).json()["total"] == 0
    # every key of the board, as a lost Redis loses them
    lost = [k async for k in redis.scan_iter(match=f"lb:{{{board_id}:*", count=1000)]
    assert any(k.endswith(b":pending") for k in lost)
    await redis.delete(*lost)
    await runtime.rebuilder.rebuild(board=board_id)
    assert await own_views() == before
    assert (await client.get(path)).json()["total"] == 0
