"""The log applier: the PostgreSQL copy (player_best, sum_runs) follows the Redis boards.

Runs go in through the API; the session app's log consumer applies them again and writes
player_best. Direct Applier.apply calls check idempotency, parking and the conditional max.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import timedelta
from typing import Any

import httpx
import orjson
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.periods import ALL_TIME, period_at
from rankd.runs import Run, decode_message, encode_message
from rankd.runtime import Runtime
from rankd.stores.redis import keys
from rankd.stores.runlog import LogMessage
from tests.support.common import MakeBoard
from tests.support.durable import (
    BoardState,
    pg_best,
    pg_composites,
    pg_snapshot,
    pg_sum_runs,
    ranked,
    redis_runs,
    redis_state,
    submit,
    wait_consumer_idle,
    wait_until,
    zscore_of,
)
from tests.support.wire import ago, ms, now_ms

ALL_WINDOWS = ["all-time", "daily", "weekly", "monthly"]
# (window, period, player) -> (score, ended_ms, run_id)
ExpectedBest = dict[tuple[str, str, str], tuple[int, int, str]]
# two boards' Redis state and counted runs, and their durable copies
Snapshot = tuple[BoardState, BoardState, BoardState, dict[str, Any], dict[str, Any]]


def fake_seq() -> int:
    """A sequence number no real log message has (parked_messages is keyed by it)."""
    return 10**12 + random.randrange(10**11)


async def wait_pg_matches_redis(
    pg: AsyncConnection[Any],
    redis: Redis,
    board_id: str,
    windows: list[str],
    timeout_s: float = 10.0,
) -> tuple[BoardState, BoardState]:
    """Poll until player_best holds exactly the composites Redis holds for the board."""
    seen: dict[str, Any] = {}

    async def same() -> bool:
        seen["redis"] = await redis_state(redis, board_id, windows)
        seen["pg"] = await pg_composites(pg, board_id)
        return bool(seen["redis"]) and seen["redis"] == seen["pg"]

    matched = await wait_until(same, timeout_s=timeout_s)
    assert matched, f"player_best never matched Redis:\nredis={seen['redis']}\npg={seen['pg']}"
    return seen["redis"], seen["pg"]


async def log_messages(runtime: Runtime, board_id: str, after_seq: int) -> list[LogMessage]:
    """The board's log messages with sequence > after_seq, as the consumer sees them."""
    runlog = runtime.runlog
    last = await runlog.last_sequence()
    found: list[LogMessage] = []
    reader = await runlog.read_from(after_seq + 1)
    try:
        while messages := await reader.fetch(1000, 2.0):
            found += [
                m for m in messages if m.seq <= last and decode_message(m.data)[0] == board_id
            ]
            if messages[-1].seq >= last:
                break
    finally:
        await reader.close()
    return found


def record(
    best: ExpectedBest, result: dict[str, Any], player: str, score: int, ended_ms: int
) -> None:
    """Fold one submitted run into the expected best entries (distinct scores per player)."""
    for window, period in ranked(result):
        key = (window, period, player)
        held = best.get(key)
        if held is None or score > held[0]:
            best[key] = (score, ended_ms, result["run_id"])


async def populate_best(client: httpx.AsyncClient, board_id: str) -> ExpectedBest:
    """Several players, several runs each, all windows; returns the expected best per entry:
    (window, period, player) -> (score, ended_ms, run_id)."""
    best: ExpectedBest = {}
    rng = random.Random(7)
    scores = rng.sample(range(1000, 900_000), 30)
    first = ago(minutes=50)
    for i, score in enumerate(scores):
        player, ended = f"p{i % 6}", first + timedelta(minutes=i)
        result = await submit(client, board_id, f"r{i}", player, score, ended)
        record(best, result, player, score, ms(ended))
    # a resend of a run and a lower late run change nothing
    resent = await submit(client, board_id, "r0", "p0", scores[0], first)
    record(best, resent, "p0", scores[0], ms(first))
    ended = ago(minutes=1)
    record(best, await submit(client, board_id, "r-low", "p1", 1, ended), "p1", 1, ms(ended))
    return best


async def test_best_board_player_best_follows_redis(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    board_id = await make_board(windows=ALL_WINDOWS)
    best = await populate_best(client, board_id)
    redis_now, _ = await wait_pg_matches_redis(pg, redis, board_id, ALL_WINDOWS)
    board = await runtime.boards.get(board_id)

    rows = await pg_best(pg, board_id)
    assert set(rows) == set(best)
    for (window, period, player), (score, ended_ms, run_id) in best.items():
        composite, pg_score, achieved_ms, pg_run = rows[(window, period, player)]
        held = await zscore_of(redis, keys.period_keys(board_id, window, period).public, player)
        assert held is not None and composite == int(held)
        assert composite == redis_now[(window, period)][player]
        assert board.codecs[window].unpack(composite)[0] == score
        assert pg_score == score
        assert achieved_ms == ended_ms, (window, period, player)
        assert pg_run == run_id


async def test_sum_board_totals_and_sum_runs_follow_redis(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    windows = ["all-time", "daily", "weekly"]
    board_id = await make_board(windows=windows, policy="sum")
    totals: dict[tuple[str, str, str], int] = defaultdict(int)
    counted: set[tuple[str, str, str, str]] = set()
    ended = {i: ago(minutes=40 - i) for i in range(24)}
    for i in range(24):
        player, score = f"s{i % 5}", 10 + 7 * i
        result = await submit(client, board_id, f"run-{i}", player, score, ended[i])
        for window, period in ranked(result):
            totals[(window, period, player)] += score
            counted.add((window, period, player, f"run-{i}"))
    # resending counted runs does not count them twice (a resend carries the same ended_at:
    # another time could fall in another daily period, where the run was never counted)
    for i in (0, 3, 3):
        result = await submit(client, board_id, f"run-{i}", f"s{i % 5}", 10 + 7 * i, ended[i])
        assert all(not s["improved"] for s in result["standings"]), result

    await wait_consumer_idle(client, runtime)
    board = await runtime.boards.get(board_id)
    rows = await pg_best(pg, board_id)
    assert set(rows) == set(totals)
    runs = {
        (w, p, player, run_id) for w, p, player, run_id, _, _ in await pg_sum_runs(pg, board_id)
    }
    assert runs == counted
    for (window, period, player), total in totals.items():
        held = await zscore_of(redis, keys.period_keys(board_id, window, period).public, player)
        assert held is not None
        assert board.codecs[window].unpack(int(held))[0] == total
        assert rows[(window, period, player)][1] == total, (window, period, player)
    # the composite is what a rebuild loads into Redis: it must be Redis's own
    await wait_pg_matches_redis(pg, redis, board_id, windows, timeout_s=0.5)


async def test_applying_the_same_batch_twice_changes_nothing(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    start = await runtime.runlog.last_sequence()
    best_id = await make_board(windows=ALL_WINDOWS)
    sum_id = await make_board(windows=["all-time", "daily"], policy="sum")
    await populate_best(client, best_id)
    for i in range(12):
        await submit(client, sum_id, f"q{i}", f"s{i % 4}", 5 + i, ago(minutes=30 - i))
    await wait_consumer_idle(client, runtime)

    async def snapshot() -> Snapshot:
        return (
            await redis_state(redis, best_id, ALL_WINDOWS),
            await redis_state(redis, sum_id, ["all-time", "daily"]),
            await redis_runs(redis, sum_id, ["all-time", "daily"]),
            await pg_snapshot(pg, best_id),
            await pg_snapshot(pg, sum_id),
        )

    before = await snapshot()
    batch = await log_messages(runtime, best_id, start) + await log_messages(runtime, sum_id, start)
    assert len(batch) >= 40
    for _ in range(2):
        outcome = await runtime.applier.apply(batch)
        assert outcome.parked == []
        assert sorted(outcome.applied) == sorted(m.seq for m in batch)
        assert await snapshot() == before


async def test_malformed_messages_are_parked_and_the_rest_applies(
    runtime: Runtime, make_board: MakeBoard, redis: Redis, pg: AsyncConnection[Any]
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    now = ms(now_ms())
    good_a = Run("good-a", "pa", 500, now - 60_000, now)
    good_b = Run("good-b", "pb", 700, now - 30_000, now)
    subject = f"{runtime.settings.subject_prefix}.{board_id}"
    garbage = b"\xff\x00 this is not json"
    unknown = encode_message("no-such-board-" + board_id, [Run("x1", "px", 1, now, now)])
    base = fake_seq()
    seqs = [base + i for i in range(5)]
    batch = [
        LogMessage(seqs[0], subject, encode_message(board_id, [good_a])),
        LogMessage(seqs[1], subject, garbage),
        LogMessage(seqs[2], f"{runtime.settings.subject_prefix}.nope", unknown),
        LogMessage(seqs[3], subject, orjson.dumps({"v": 1, "board": board_id})),
        LogMessage(seqs[4], subject, encode_message(board_id, [good_b])),
    ]
    outcome = await runtime.applier.apply(batch)
    assert sorted(outcome.parked) == [seqs[1], seqs[2], seqs[3]]
    assert sorted(outcome.applied) == [seqs[0], seqs[4]]

    cur = await pg.execute(
        "SELECT stream_seq, subject, reason, payload FROM parked_messages"
        " WHERE stream_seq = ANY(%s) ORDER BY stream_seq",
        (seqs,),
    )
    parked = await cur.fetchall()
    assert [r[0] for r in parked] == [seqs[1], seqs[2], seqs[3]]
    assert [bytes(r[3]) for r in parked] == [batch[1].data, batch[2].data, batch[3].data]
    assert all(r[2].strip() for r in parked)
    assert parked[1][1] == f"{runtime.settings.subject_prefix}.nope"

    # the good messages of the same batch applied to Redis and to PostgreSQL
    rows = await pg_best(pg, board_id)
    daily = period_at("daily", good_a.ended_at_ms).id
    for run in (good_a, good_b):
        for window, period in ((ALL_TIME, ALL_TIME), ("daily", daily)):
            pk = keys.period_keys(board_id, window, period)
            assert await zscore_of(redis, pk.public, run.player_id) is not None
            assert rows[(window, period, run.player_id)][3] == run.run_id

    # applying the parked batch again parks nothing new and changes nothing
    before = await pg_snapshot(pg, board_id)
    again = await runtime.applier.apply(batch)
    assert sorted(again.parked) == [seqs[1], seqs[2], seqs[3]]
    assert await pg_snapshot(pg, board_id) == before


async def test_a_run_the_board_cannot_hold_is_parked_not_retried(
    runtime: Runtime, make_board: MakeBoard, redis: Redis, pg: AsyncConnection[Any]
) -> None:
    """A well-formed message whose run can never apply (a score above the board's
    max_score, e.g. written by another producer) must be parked like any malformed
    message; raising would fail, and redeliver forever, every batch it travels in."""
    board_id = await make_board(windows=["all-time"], max_score=1000)
    now = ms(now_ms())
    subject = f"{runtime.settings.subject_prefix}.{board_id}"
    good = Run("fine", "pg1", 10, now - 1000, now)
    bad = Run("too-big", "pg2", 5000, now - 1000, now)
    base = fake_seq()
    seqs = [base, base + 1]
    batch = [
        LogMessage(seqs[0], subject, encode_message(board_id, [good])),
        LogMessage(seqs[1], subject, encode_message(board_id, [bad])),
    ]
    outcome = await runtime.applier.apply(batch)
    assert outcome.parked == [seqs[1]]
    assert outcome.applied == [seqs[0]]
    assert (ALL_TIME, ALL_TIME, "pg1") in await pg_best(pg, board_id)


async def test_closed_daily_period_writes_only_the_other_windows(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    board_id = await make_board(windows=["all-time", "daily"], grace_seconds=0)
    old = ago(days=3)
    result = await submit(client, board_id, "late", "old-player", 4242, old)
    statuses = {s["window"]: s["status"] for s in result["standings"]}
    assert statuses == {"all-time": "ranked", "daily": "closed"}
    await submit(client, board_id, "fresh", "new-player", 17, ago(seconds=5))

    await wait_pg_matches_redis(pg, redis, board_id, ["all-time", "daily"])
    rows = await pg_best(pg, board_id)
    old_day = period_at("daily", ms(old)).id
    assert (ALL_TIME, ALL_TIME, "old-player") in rows
    assert rows[(ALL_TIME, ALL_TIME, "old-player")][2] == ms(old)
    assert not [k for k in rows if k[0] == "daily" and k[2] == "old-player"]
    assert not [k for k in rows if k[1] == old_day]
    snapshot = await pg_snapshot(pg, board_id)
    assert ("daily", old_day) not in {(w, p) for w, p, _ in snapshot["periods"]}
    assert not await redis.exists(keys.period_keys(board_id, "daily", old_day).public)

    # the same run applied directly (as a replay would) still writes no daily row
    now = ms(now_ms())
    late = Run("late-2", "old-player-2", 99, ms(old), now)
    await runtime.applier.apply([LogMessage(fake_seq(), "x", encode_message(board_id, [late]))])
    rows = await pg_best(pg, board_id)
    assert (ALL_TIME, ALL_TIME, "old-player-2") in rows
    assert not [k for k in rows if k[1] == old_day]


async def test_conditional_max_never_lowers_player_best(
    runtime: Runtime, make_board: MakeBoard, redis: Redis, pg: AsyncConnection[Any]
) -> None:
    # max_score 2000 leaves 1 ms time units in every window, so every time tie-break shows
    board_id = await make_board(windows=["all-time", "daily"], max_score=2000)
    now = ms(now_ms())
    high = Run("high", "cm", 1500, now - 60_000, now)
    older_lower = Run("older-lower", "cm", 900, now - 120_000, now)
    newer_lower = Run("newer-lower", "cm", 1200, now - 1_000, now)
    equal_later = Run("equal-later", "cm", 1500, now - 30_000, now)
    subject = f"{runtime.settings.subject_prefix}.{board_id}"

    async def apply(*runs: Run) -> None:
        await runtime.applier.apply(
            [LogMessage(fake_seq(), subject, encode_message(board_id, [r])) for r in runs]
        )

    await apply(high)
    before_pg = await pg_best(pg, board_id)
    before_redis = await redis_state(redis, board_id, ["all-time", "daily"])
    assert {row[3] for row in before_pg.values()} == {"high"}

    await apply(older_lower)
    await apply(newer_lower)
    await apply(equal_later)
    await apply(equal_later, older_lower, newer_lower)  # and all in one batch
    assert await pg_best(pg, board_id) == before_pg
    assert await redis_state(redis, board_id, ["all-time", "daily"]) == before_redis
    for (window, period, _), (composite, score, achieved, run_id) in before_pg.items():
        assert (score, achieved, run_id) == (1500, high.ended_at_ms, "high")
        assert composite == before_redis[(window, period)]["cm"]

    # an equal score achieved earlier is better (ties go to the earlier achiever)
    equal_earlier = Run("equal-earlier", "cm", 1500, now - 90_000, now)
    await apply(equal_earlier)
    after = await pg_best(pg, board_id)
    assert {row[3] for row in after.values()} == {"equal-earlier"}
    assert {row[2] for row in after.values()} == {equal_earlier.ended_at_ms}
    assert await pg_composites(pg, board_id) == await redis_state(
        redis, board_id, ["all-time", "daily"]
    )


async def test_asc_sum_board_is_copied_to_player_best(
    client: httpx.AsyncClient,
    runtime: Runtime,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    """An ``asc`` sum board (lowest total first, e.g. total time over runs) is written to
    PostgreSQL like any other board. Applied directly, not through the log: a batch that
    fails to write would be redelivered to the session's consumer again and again."""
    board_id = await make_board(windows=["all-time", "daily"], policy="sum", order="asc")
    now = ms(now_ms())
    runs = [Run(f"a{i}", f"asc{i % 2}", 100 + i, now - 10_000 + i, now) for i in range(4)]
    subject = f"{runtime.settings.subject_prefix}.{board_id}"
    await runtime.applier.apply([LogMessage(fake_seq(), subject, encode_message(board_id, runs))])
    assert await pg_composites(pg, board_id) == await redis_state(
        redis, board_id, ["all-time", "daily"]
    )
    rows = await pg_best(pg, board_id)
    assert rows[(ALL_TIME, ALL_TIME, "asc0")][1] == 100 + 102
    assert rows[(ALL_TIME, ALL_TIME, "asc1")][1] == 101 + 103


async def test_ids_with_copy_special_characters_are_written_as_they_are(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    redis: Redis,
    pg: AsyncConnection[Any],
    runtime: Runtime,
) -> None:
    """The durable copy writes ids exactly, whatever bytes they hold. The API never lets a
    tab, newline or backslash into an id, but the log may hold messages from elsewhere; COPY
    text gives all three a meaning, so they must be escaped, not trusted away."""
    board_id = await make_board(windows=["all-time"])
    rt = runtime
    now = ms(now_ms())
    players = ["tab\there", "new\nline", "back\\slash", "back\\b", "cr\rhere", "\\N"]
    runs = [Run(f"run\t{i}\\n", p, 10 + i, now - 1000, now) for i, p in enumerate(players)]
    subject = f"{rt.settings.subject_prefix}.{board_id}"
    outcome = await rt.applier.apply(
        [LogMessage(fake_seq(), subject, encode_message(board_id, runs))]
    )
    assert outcome.parked == []
    rows = await pg_best(pg, board_id)
    assert set(rows) == {(ALL_TIME, ALL_TIME, p) for p in players}
    for run in runs:
        assert rows[(ALL_TIME, ALL_TIME, run.player_id)][3] == run.run_id
    assert await pg_composites(pg, board_id) == await redis_state(redis, board_id, ["all-time"])
