"""The run log: every board id the contract allows can be logged and read back; the one
fetch -> apply -> ack loop acks only what applied."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection

from rankd.errors import Unavailable
from rankd.formats import is_board_id
from rankd.periods import ALL_TIME
from rankd.runtime import Runtime
from rankd.services.applier import Outcome
from rankd.services.consumer import DURABLE, applied_through
from rankd.services.log_loop import apply_log
from rankd.stores.runlog import Durable, JetStreamLog, LogMessage, subject_token
from tests.support.common import ADMIN_H, MakeBoard, Urls
from tests.support.durable import pg_best, submit, wait_until
from tests.support.wire import ago

# ``.`` separates tokens in a NATS subject: these would make empty or extra tokens if the
# board id went into the subject as is (``runs.a..b``, ``runs.x.``).
DOTTED = ["a..b", "x.", "a.b", "..", "a.-_.9"]


@pytest.mark.parametrize("board_id", DOTTED)
async def test_a_board_id_with_dots_takes_runs(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], board_id: str
) -> None:
    if board_id == "..":
        board_id = "0.."  # a board id starts with a letter or digit
    # fixed ids: the board may exist already when the servers are reused
    created = await client.put(
        f"/v1/boards/{board_id}", json={"windows": ["all-time"]}, headers=ADMIN_H
    )
    assert created.status_code in (200, 201), created.text
    player = f"dot-{uuid.uuid4().hex[:8]}"
    result = await submit(client, board_id, f"r-{player}", player, 77, ago(seconds=5))
    assert result["standings"][0]["status"] == "ranked"

    read = await client.get(f"/v1/boards/{board_id}/players/{player}")
    assert read.status_code == 200, read.text
    assert read.json()["score"] == 77

    # the log consumer applied it too: the message reached the log under a valid subject
    async def copied() -> bool:
        return (ALL_TIME, ALL_TIME, player) in await pg_best(pg, board_id)

    assert await wait_until(copied, timeout_s=10), f"{board_id}: not in player_best"


def test_subject_tokens_are_distinct_and_valid_for_every_board_id_shape() -> None:
    ids = ["a", "a.b", "a..b", "a~b", "x.", "x..", "0..", "a-b", "a_b", "a.b.c", "ab.c"]
    ids = [i for i in ids if is_board_id(i)]
    tokens = [subject_token(i) for i in ids]
    assert len(set(tokens)) == len(ids)
    for token in tokens:
        assert token and not set(token) & {".", "*", ">", " ", "\t"}
    assert subject_token("plain-board_1") == "plain-board_1"  # old subjects unchanged


async def test_the_consumer_is_never_reported_idle_short_of_a_logged_run(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, pg: AsyncConnection[Any]
) -> None:
    """On a replicated log (the topology runs) a publish is acknowledged before every
    server has it, and the consumer's server could answer "nothing pending" for a moment
    (each of three runs of 200 submits on three NATS servers saw it). A run the log holds
    that the consumer has not handed out must count as unapplied whatever the consumer says,
    so a ban's sweep or a season freeze waits for it: "every run applied" means it is in
    PostgreSQL."""
    board = await make_board(windows=["all-time"])

    async def applied(k: int) -> bool:
        best = await pg_best(pg, board)
        return best.get((ALL_TIME, ALL_TIME, f"p{k % 7}"), (0, -1))[1] == k

    for k in range(200):
        await submit(client, board, f"r{k}", f"p{k % 7}", k, ago(seconds=5))
        lag = await runtime.runlog.lag(DURABLE)
        if lag.caught_up:  # then the run is applied (the ack floor itself may trail a bit)
            assert await applied(k), (k, lag)
        if await applied_through(runtime.runlog) is None:
            assert await applied(k), k


class ScriptedSubscription:
    """A LogSubscription that hands out prepared batches and records acks."""

    def __init__(self, batches: list[list[LogMessage]]) -> None:
        self.batches = batches
        self.acked: list[int] = []
        self.told: list[list[int]] = []  # the batches reported as still being worked on

    async def fetch(self, n: int, timeout_s: float) -> list[LogMessage]:
        return self.batches.pop(0) if self.batches else []

    async def ack(self, messages: Sequence[LogMessage]) -> None:
        self.acked += [m.seq for m in messages]

    async def working(self, messages: Sequence[LogMessage]) -> None:
        self.told.append([m.seq for m in messages])

    async def close(self) -> None:
        pass


class RecordingApplier:
    def __init__(self, fail_on: int | None = None, takes_s: float = 0.0) -> None:
        self.fail_on = fail_on
        self.takes_s = takes_s
        self.applied: list[int] = []
        self.started = asyncio.Event()  # a batch is being applied

    async def apply(self, messages: list[LogMessage]) -> Outcome:
        self.started.set()
        await asyncio.sleep(self.takes_s)
        if any(m.seq == self.fail_on for m in messages):
            raise Unavailable("PostgreSQL is down")
        self.applied += [m.seq for m in messages]
        return Outcome(applied=[m.seq for m in messages])


def messages(*seqs: int) -> list[LogMessage]:
    return [LogMessage(s, "runs.b", b"{}") for s in seqs]


async def test_the_loop_acks_each_batch_after_it_applied_and_stops_at_the_end() -> None:
    sub = ScriptedSubscription([messages(1, 2), messages(3), messages(4, 5), messages(6)])
    applier = RecordingApplier()
    seen: list[int] = []
    await apply_log(
        sub,
        applier,  # type: ignore[arg-type]
        batch=10,
        fetch_timeout_s=0.1,
        until=5,
        on_batch=lambda ms, _: seen.append(len(ms)),
    )
    assert applier.applied == sub.acked == [1, 2, 3, 4, 5]  # 6 is past the end
    assert seen == [2, 1, 2]


async def test_the_loop_leaves_a_batch_that_failed_unacked() -> None:
    sub = ScriptedSubscription([messages(1, 2), messages(3, 4), messages(5)])
    with pytest.raises(Unavailable):
        await apply_log(sub, RecordingApplier(fail_on=4), batch=10, fetch_timeout_s=0.1)  # type: ignore[arg-type]
    assert sub.acked == [1, 2]


async def test_the_loop_returns_when_the_log_has_nothing_more_before_the_end() -> None:
    sub = ScriptedSubscription([messages(1)])
    await apply_log(sub, RecordingApplier(), batch=10, fetch_timeout_s=0.1, until=9)  # type: ignore[arg-type]
    assert sub.acked == [1]


async def test_the_loop_waits_out_a_slow_log_that_still_holds_what_is_left() -> None:
    """Fetches that time out (a loaded three-node log, big messages) do not end a replay
    while the log says it holds more up to the end; it ends once that is applied."""
    sub = ScriptedSubscription([messages(1), [], [], messages(2, 3), [], messages(4)])
    asked: list[int] = []

    async def more_to_come(seen: int) -> bool:
        asked.append(seen)
        return seen < 4

    applier = RecordingApplier()
    await apply_log(
        sub,
        applier,  # type: ignore[arg-type]
        batch=10,
        fetch_timeout_s=0.1,
        until=4,
        more_to_come=more_to_come,
    )
    assert (applier.applied, sub.acked, asked) == ([1, 2, 3, 4], [1, 2, 3, 4], [1, 1, 3])


async def test_the_loop_gives_up_on_a_log_that_holds_more_but_delivers_nothing() -> None:
    sub = ScriptedSubscription([messages(1)])

    async def more_to_come(seen: int) -> bool:
        return True

    with pytest.raises(Unavailable, match="after 1 up to 9"):
        await apply_log(
            sub,
            RecordingApplier(),  # type: ignore[arg-type]
            batch=10,
            fetch_timeout_s=0.01,
            until=9,
            more_to_come=more_to_come,
            patience_s=0.2,
        )
    assert sub.acked == [1]


async def test_the_loop_ends_when_told_to_stop_even_if_not_cancelled() -> None:
    stop = asyncio.Event()
    sub = ScriptedSubscription([messages(1), messages(2), messages(3)])

    def applied(batch: list[LogMessage], _: Outcome) -> None:
        if batch[0].seq == 2:
            stop.set()

    await apply_log(
        sub,
        RecordingApplier(),  # type: ignore[arg-type]
        batch=10,
        fetch_timeout_s=0.1,
        stop=stop,
        on_batch=applied,
    )
    assert sub.acked == [1, 2]


async def test_a_slow_batch_is_reported_as_worked_on_until_it_is_applied() -> None:
    sub = ScriptedSubscription([messages(1, 2), messages(3)])
    applier = RecordingApplier(takes_s=0.35)
    await apply_log(
        sub,
        applier,  # type: ignore[arg-type]
        batch=10,
        fetch_timeout_s=0.1,
        until=3,
        progress_every_s=0.1,
    )
    assert sub.acked == [1, 2, 3]
    # about three reports a batch (fewer when a loaded machine delays the timer), each
    # naming the whole batch, none after its ack
    assert 2 <= len(sub.told) <= 8, sub.told
    assert sub.told[0] == [1, 2] and sub.told[-1] == [3]
    assert set(map(tuple, sub.told)) == {(1, 2), (3,)}

    quiet = ScriptedSubscription([messages(1)])
    slow = RecordingApplier(takes_s=0.2)
    await apply_log(quiet, slow, batch=10, fetch_timeout_s=0.1, until=1)  # type: ignore[arg-type]
    assert quiet.told == []  # without progress_every_s: never


async def _one_slow_batch(urls: Urls, progress_every_s: float | None) -> list[int]:
    """A real JetStream consumer whose ack wait is 0.8 s applies one message in 3 s; what
    a second instance on the same consumer is delivered meanwhile. (Times with room for a
    loaded machine's pauses: the reports come four times an ack wait.)"""
    tag = uuid.uuid4().hex[:10]
    log = JetStreamLog(
        urls.nats, stream=f"PROGRESS_{tag}", subject_prefix=f"progress{tag}", timeout_s=5
    )
    await log.open()
    try:
        await log.publish("board", b"{}", f"m-{tag}")
        durable = Durable(f"slow-{tag}", backoff_s=[0.8, 0.8], max_deliver=5, max_ack_pending=100)
        first, second = await log.subscribe(durable), await log.subscribe(durable)
        applier = RecordingApplier(takes_s=3.0)
        applying = asyncio.create_task(
            apply_log(
                first,
                applier,  # type: ignore[arg-type]
                batch=10,
                fetch_timeout_s=2.0,
                until=1,
                progress_every_s=progress_every_s,
            )
        )
        await asyncio.wait_for(applier.started.wait(), 10)  # the first instance has it
        again = await second.fetch(10, timeout_s=2.5)
        await applying
        assert applier.applied == [1]
        await first.close()
        await second.close()
        return [m.seq for m in again]
    finally:
        js = log.js
        if js is not None:
            await js.delete_stream(f"PROGRESS_{tag}")
        await log.close()


async def test_a_batch_applying_past_the_ack_wait_is_not_delivered_again(urls: Urls) -> None:
    assert await _one_slow_batch(urls, progress_every_s=0.2) == []
    # the control: without the reports the log hands the same message to the other instance
    assert await _one_slow_batch(urls, progress_every_s=None) == [1]
