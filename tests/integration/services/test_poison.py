"""Poison messages: a log message that can never apply is parked, never blocks the rest.

A message PostgreSQL rejects (here a player id with a NUL byte, which a text column cannot
hold) travels in the real log beside good ones; the session's consumer must apply the good
ones within seconds and park the bad one with its payload. A transient failure (a store
that cannot be reached) must park nothing: the batch stays in the log for redelivery.
"""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import AsyncConnection
from psycopg_pool import PoolTimeout
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError

from rankd.codec import CodecError
from rankd.embedded import free_port
from rankd.errors import Unavailable, is_transient
from rankd.periods import ALL_TIME
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from rankd.services.applier import Applier
from rankd.services.consumer import Lag
from rankd.stores.postgres import PostgresStore
from rankd.stores.postgres import _reachable as pg_reachable
from rankd.stores.redis.connection import reachable as redis_reachable
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import LogMessage
from tests.support.common import MakeBoard
from tests.support.durable import pg_best, wait_consumer_idle, wait_until
from tests.support.wire import ms, now_ms


async def parked_rows(pg: AsyncConnection[Any], seqs: list[int]) -> dict[int, tuple[str, bytes]]:
    """stream_seq -> (reason, payload) of the parked messages among ``seqs``."""
    cur = await pg.execute(
        "SELECT stream_seq, reason, payload FROM parked_messages WHERE stream_seq = ANY(%s)",
        (seqs,),
    )
    return {r[0]: (r[1], bytes(r[2])) for r in await cur.fetchall()}


async def test_a_message_postgresql_rejects_is_parked_and_the_rest_of_the_log_applies(
    client: httpx.AsyncClient, make_board: MakeBoard, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    rt = runtime
    board_id = await make_board(windows=["all-time"])
    now = ms(now_ms())
    good = [Run(f"good-{i}", f"gp{i}", 100 + i, now - 1000, now) for i in range(8)]
    # Redis holds any bytes; PostgreSQL text cannot hold NUL, so the durable copy rejects it
    poison = Run("poison", "nul\x00player", 50, now - 1000, now)
    runs = [*good[:4], poison, *good[4:]]
    payloads = [encode_message(board_id, [r]) for r in runs]

    started = time.monotonic()
    # published together, so the consumer is likely to fetch them in one batch
    seqs = await asyncio.gather(
        *(
            rt.runlog.publish(board_id, p, f"{board_id}/{r.run_id}")
            for r, p in zip(runs, payloads, strict=True)
        )
    )
    poison_seq = seqs[4]

    async def settled() -> bool:
        rows = await pg_best(pg, board_id)
        landed = all((ALL_TIME, ALL_TIME, r.player_id) in rows for r in good)
        return landed and poison_seq in await parked_rows(pg, [poison_seq])

    assert await wait_until(settled, timeout_s=30), (
        f"good runs in player_best: {sorted(p for _, _, p in await pg_best(pg, board_id))}, "
        f"poison parked: {await parked_rows(pg, [poison_seq])}"
    )
    recovered_s = time.monotonic() - started
    print(f"\npoison message isolated and parked, batch-mates applied in {recovered_s:.2f}s")
    assert recovered_s < 10

    reason, payload = (await parked_rows(pg, [poison_seq]))[poison_seq]
    assert payload == payloads[4]  # the full message, replayable once fixed
    assert reason.strip()
    assert "\x00" not in reason  # PostgreSQL text again
    # nothing of the poison run reached the durable copy; everything else is acked
    assert (ALL_TIME, ALL_TIME, poison.player_id) not in await pg_best(pg, board_id)
    await wait_consumer_idle(client, runtime, within_s=15)


def fake_seq() -> int:
    """A sequence number no real log message has (parked_messages is keyed by it)."""
    return 10**12 + random.randrange(10**11)


async def poison_batch(
    client: httpx.AsyncClient, board_id: str, runtime: Runtime
) -> list[LogMessage]:
    """Two good messages around three that can never apply, with unused sequence numbers."""
    rt = runtime
    now = ms(now_ms())
    subject = f"{rt.settings.subject_prefix}.{board_id}"
    runs = [
        Run("ok-1", "ok1", 10, now - 1000, now),
        Run("nul", "n\x00l", 20, now - 1000, now),  # PostgreSQL rejects it (DataError)
        Run("far", "far", 30, 10**15, now),  # no calendar holds it (OverflowError)
        Run("ok-2", "ok2", 40, now - 1000, now),
    ]
    base = fake_seq()
    messages = [
        LogMessage(base + i, subject, encode_message(board_id, [r])) for i, r in enumerate(runs)
    ]
    messages.insert(2, LogMessage(base + 9, subject, b"not json"))
    return messages


async def test_a_batch_failing_in_postgresql_applies_all_but_the_message_at_fault(
    client: httpx.AsyncClient, make_board: MakeBoard, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    rt = runtime
    board_id = await make_board(windows=["all-time", "daily"])
    batch = await poison_batch(client, board_id, runtime)
    seqs = [m.seq for m in batch]
    outcome = await rt.applier.apply(batch)
    assert sorted(outcome.applied) == [seqs[0], seqs[4]]
    assert sorted(outcome.parked) == sorted(seqs[1:4])
    parked = await parked_rows(pg, seqs)
    assert set(parked) == set(seqs[1:4])
    assert {payload for _, payload in parked.values()} == {m.data for m in batch[1:4]}
    assert "DataError" in parked[seqs[1]][0] or "NUL" in parked[seqs[1]][0]
    rows = await pg_best(pg, board_id)
    assert {player for _, _, player in rows} == {"ok1", "ok2"}


async def test_a_transient_failure_parks_nothing_and_the_batch_applies_later(
    client: httpx.AsyncClient, make_board: MakeBoard, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    """PostgreSQL or Redis unreachable is not the messages' fault: the batch is raised back
    (the log delivers it again), nothing is parked, not even the messages that would be."""
    rt = runtime
    board_id = await make_board(windows=["all-time"])
    batch = await poison_batch(client, board_id, runtime)
    seqs = [m.seq for m in batch]

    dead_redis = RedisStores(f"redis://127.0.0.1:{free_port()}", pool_timeout_s=1)
    dead_pg = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/rankd")
    dead_pg.pool.timeout = 0.5
    await dead_pg.pool.open(wait=False)
    try:
        no_redis = Applier(
            rt.boards,
            dead_redis.writes,
            dead_redis.marks,
            dead_redis.reads,
            rt.pg,
            rt.moderation,
        )
        no_postgres = Applier(
            rt.boards,
            rt.redis.writes,
            rt.redis.marks,
            rt.redis.reads,
            dead_pg,
            rt.moderation,
        )
        for applier in (no_redis, no_postgres):
            started = time.monotonic()
            with pytest.raises(Exception) as caught:
                await applier.apply(batch)
            assert is_transient(caught.value), repr(caught.value)
            assert time.monotonic() - started < 10
            assert await parked_rows(pg, seqs) == {}
            assert await pg_best(pg, board_id) == {}
    finally:
        await dead_pg.close()
        await dead_redis.close()

    # delivered again once the stores are back: the good ones apply, the bad ones park
    outcome = await rt.applier.apply(batch)
    assert sorted(outcome.applied) == [seqs[0], seqs[4]]
    assert set(await parked_rows(pg, seqs)) == set(seqs[1:4])


async def test_a_message_naming_no_possible_board_is_parked(
    client: httpx.AsyncClient, make_board: MakeBoard, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    """A board field PostgreSQL cannot even look up (NUL) is the message's fault too."""
    rt = runtime
    board_id = await make_board(windows=["all-time"])
    now = ms(now_ms())
    subject = f"{rt.settings.subject_prefix}.{board_id}"
    good = Run("fine", "fine", 1, now - 1000, now)
    seqs = [fake_seq() for _ in range(4)]
    batch = [
        LogMessage(seqs[0], subject, encode_message(board_id, [good])),
        LogMessage(seqs[1], subject, encode_message("b\x00ard", [good])),
        LogMessage(seqs[2], subject, encode_message("UPPER", [good])),
        LogMessage(seqs[3], subject, encode_message("x" * 65, [good])),
    ]
    outcome = await rt.applier.apply(batch)
    assert outcome.applied == [seqs[0]]
    assert sorted(outcome.parked) == sorted(seqs[1:])
    assert set(await parked_rows(pg, seqs)) == set(seqs[1:])


def through_stores(exc: Exception) -> Exception:
    """What leaves the stores when their driver raises ``exc`` (the stores sort driver
    errors into the project's; the applier only sees those)."""
    guard = redis_reachable if type(exc).__module__.startswith("redis") else pg_reachable
    try:
        with guard():
            raise exc
    except Exception as out:
        return out
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (psycopg.OperationalError("server closed the connection"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),
        (psycopg.errors.DeadlockDetected("deadlock"), True),
        (PoolTimeout("couldn't get a connection"), True),
        (psycopg.errors.UndefinedTable("no such table"), True),
        (RedisConnectionError("refused"), True),
        (RedisTimeoutError("timed out"), True),
        (OutOfMemoryError("OOM command not allowed"), True),
        (ConnectionRefusedError(), True),
        (TimeoutError(), True),
        (Unavailable("the boards are unreachable"), True),
        (psycopg.DataError("NUL"), False),
        (psycopg.errors.BadCopyFileFormat("extra data"), False),
        (psycopg.errors.NumericValueOutOfRange("bigint"), False),
        (psycopg.errors.ProgramLimitExceeded("index row too large"), False),
        (psycopg.IntegrityError("not null"), False),
        (CodecError("score out of range"), False),
        (ValueError("malformed"), False),
        (OverflowError("date value out of range"), False),
    ],
)
def test_transient_or_poison(exc: Exception, transient: bool) -> None:
    assert is_transient(through_stores(exc)) is transient


async def test_readyz_is_degraded_while_anything_is_parked(
    client: httpx.AsyncClient, make_board: MakeBoard, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    rt = runtime
    board_id = await make_board(windows=["all-time"])
    seq = fake_seq()
    subject = f"{rt.settings.subject_prefix}.{board_id}"
    outcome = await rt.applier.apply([LogMessage(seq, subject, b"\xff not a message")])
    assert outcome.parked == [seq]
    assert rt.consumer is not None
    await rt.consumer.refresh_lag()

    response = await client.get("/readyz")
    assert response.status_code == 200, response.text  # it serves; the copy is incomplete
    body = response.json()
    assert body["status"] == "degraded"
    assert any("parked" in reason for reason in body["reasons"]), body
    assert body["consumer"]["parked"] >= 1
    assert body["consumer"]["parked_since"].endswith("Z")
    assert all(state == "ok" for state in body["checks"].values())
    assert "rankd_parked_messages" in (await client.get("/metrics")).text


async def test_readyz_is_degraded_when_the_copy_lags_past_the_bound(
    client: httpx.AsyncClient,
    runtime: Runtime,
) -> None:
    rt = runtime
    assert rt.consumer is not None
    bound = rt.settings.ready_max_lag_s
    rt.settings.ready_max_lag_s = -1.0  # any lag at all is too much
    try:
        body = (await client.get("/readyz")).json()
        assert body["status"] == "degraded"
        assert any("behind the log" in reason for reason in body["reasons"]), body
    finally:
        rt.settings.ready_max_lag_s = bound


def test_lag_problems_name_the_lag_and_the_parked_messages() -> None:
    assert Lag(oldest_unacked_s=59.0).problems(60.0) == []
    behind = Lag(oldest_unacked_s=75.0).problems(60.0)
    assert behind == ["the PostgreSQL copy is 75s behind the log (more than 60s)"]
    since = datetime(2026, 11, 3, 18, 22, 7, 123000, tzinfo=UTC)
    parked = Lag(parked=3, parked_since=since).problems(60.0)
    assert len(parked) == 1
    assert parked[0].startswith("3 log message(s) parked since 2026-11-03T18:22:07.123Z")
