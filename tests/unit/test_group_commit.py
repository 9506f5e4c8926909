"""GroupCommitter: which appends share a log message, and who learns which outcome.

This is pure coordination logic, so it runs against an in-memory stand-in for the run log
whose publishes complete only when the test says so: a real log would only make the timing
harder to control. The real log is covered by the API tests and tests/system/test_failures.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from rankd.errors import Unavailable
from rankd.runs import Run, decode_message, encode_message
from rankd.services.group_commit import GroupCommitter, message_id


@dataclass
class Publish:
    """One message handed to the log; ``outcome`` decides what its publish() returns."""

    board_id: str
    payload: bytes
    msg_id: str
    outcome: asyncio.Future[int] = field(repr=False)

    @property
    def run_ids(self) -> list[str]:
        board, runs = decode_message(self.payload)
        assert board == self.board_id
        return [r.run_id for r in runs]

    def ack(self, seq: int) -> None:
        self.outcome.set_result(seq)

    def fail(self, exc: BaseException) -> None:
        self.outcome.set_exception(exc)


class StandInLog:
    """A RunLog in memory: every publish waits until the test acks or fails it."""

    def __init__(self) -> None:
        self.publishes: list[Publish] = []
        self._handed_over = asyncio.Condition()

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        outcome: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        async with self._handed_over:
            self.publishes.append(Publish(board_id, payload, msg_id, outcome))
            self._handed_over.notify_all()
        return await outcome

    async def ping(self) -> None:
        pass

    async def published(self, count: int) -> list[Publish]:
        """Wait until ``count`` messages were handed over; return them all."""
        async with asyncio.timeout(2), self._handed_over:
            await self._handed_over.wait_for(lambda: len(self.publishes) >= count)
        return self.publishes


async def settle() -> None:
    """Let every task that can run, run (nothing here waits on I/O or timers)."""
    for _ in range(20):
        await asyncio.sleep(0)


def runs(*run_ids: str) -> list[Run]:
    return [Run(run_id, f"player-{run_id}", 10, 1_000, 2_000) for run_id in run_ids]


def committer(runlog: StandInLog, **limits: int) -> GroupCommitter:
    return GroupCommitter(runlog, **limits)


def append(group: GroupCommitter, board_id: str, *run_ids: str) -> asyncio.Task[int]:
    return asyncio.create_task(group.append(board_id, runs(*run_ids)))


async def test_a_lone_append_publishes_at_once() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=2)
    caller = append(group, "b", "r1")
    [message] = await runlog.published(1)
    assert (message.board_id, message.run_ids) == ("b", ["r1"])
    assert message.msg_id == message_id("b", message.payload)
    assert not caller.done()  # durable only once the log acks
    message.ack(7)
    assert await caller == 7


async def test_appends_wait_while_max_in_flight_and_then_leave_together() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=2)
    first, second = append(group, "b", "r1"), append(group, "b", "r2")
    await runlog.published(2)
    waiting = [append(group, "b", "r3"), append(group, "b", "r4", "r5"), append(group, "b", "r6")]
    await settle()
    assert len(runlog.publishes) == 2  # both slots taken: the later appends wait
    assert not any(task.done() for task in waiting)

    runlog.publishes[0].ack(1)
    assert await first == 1
    together = (await runlog.published(3))[2]
    assert together.run_ids == ["r3", "r4", "r5", "r6"]  # ONE message, in arrival order
    assert together.msg_id == message_id("b", together.payload)
    await settle()
    assert len(runlog.publishes) == 3

    together.ack(3)
    assert await asyncio.gather(*waiting) == [3, 3, 3]
    assert not second.done()  # its own message is still in flight
    runlog.publishes[1].ack(2)
    assert await second == 2


async def test_max_runs_caps_a_message() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=1, max_runs=3)
    blocker = append(group, "b", "r0")
    await runlog.published(1)
    callers = [
        append(group, "b", "a1", "a2"),
        append(group, "b", "b1"),
        append(group, "b", "c1"),  # would make 4 runs: waits for the next message
        append(group, "b", "d1", "d2"),
    ]
    await settle()

    runlog.publishes[0].ack(10)
    assert (await runlog.published(2))[1].run_ids == ["a1", "a2", "b1"]
    runlog.publishes[1].ack(11)
    assert (await runlog.published(3))[2].run_ids == ["c1", "d1", "d2"]
    runlog.publishes[2].ack(12)
    assert await blocker == 10
    assert await asyncio.gather(*callers) == [11, 11, 12, 12]


async def test_an_append_larger_than_max_runs_goes_alone_and_whole() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=1, max_runs=3)
    blocker = append(group, "b", "r0")
    await runlog.published(1)
    big = append(group, "b", "x1", "x2", "x3", "x4", "x5")
    small = append(group, "b", "y1")
    await settle()

    runlog.publishes[0].ack(1)
    assert (await runlog.published(2))[1].run_ids == ["x1", "x2", "x3", "x4", "x5"]
    runlog.publishes[1].ack(2)
    assert (await runlog.published(3))[2].run_ids == ["y1"]
    runlog.publishes[2].ack(3)
    assert [await blocker, await big, await small] == [1, 2, 3]


async def test_each_caller_gets_the_sequence_of_its_own_message() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=1)
    alone = append(group, "b", "r1")
    await runlog.published(1)
    pair = [append(group, "b", "r2"), append(group, "b", "r3")]
    await settle()
    runlog.publishes[0].ack(100)
    (await runlog.published(2))[1].ack(200)
    assert await alone == 100
    assert await asyncio.gather(*pair) == [200, 200]


async def test_a_failed_publish_fails_every_caller_of_that_message_and_no_other() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=2)
    first, second = append(group, "b", "r1"), append(group, "b", "r2")
    await runlog.published(2)
    pair = [append(group, "b", "r3"), append(group, "b", "r4")]
    await settle()

    down = Unavailable("the run log is unreachable")
    runlog.publishes[0].fail(down)
    with pytest.raises(Unavailable) as caught:
        await first
    assert caught.value is down

    batch = (await runlog.published(3))[2]  # the freed slot takes the waiting pair
    assert batch.run_ids == ["r3", "r4"]
    timeout = Unavailable("the run could not be made durable in the log")
    batch.fail(timeout)
    for caller in pair:
        with pytest.raises(Unavailable) as caught:
            await caller
        assert caught.value is timeout

    assert not second.done()
    runlog.publishes[1].ack(2)
    assert await second == 2


async def test_in_flight_slots_come_back_after_failures() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=2)
    for round_ in range(3):  # fill both slots, fail both, again and again
        callers = [append(group, "b", f"f{round_}a"), append(group, "b", f"f{round_}b")]
        for message in (await runlog.published(2 * round_ + 2))[-2:]:
            message.fail(Unavailable("down"))
        for caller in callers:
            with pytest.raises(Unavailable):
                await caller

    later = [append(group, "b", "ok1"), append(group, "b", "ok2")]
    first, second = (await runlog.published(8))[-2:]  # both publish at once: two free slots
    assert (first.run_ids, second.run_ids) == (["ok1"], ["ok2"])
    first.ack(21)
    second.ack(22)
    assert await asyncio.gather(*later) == [21, 22]


async def test_boards_are_independent() -> None:
    runlog = StandInLog()
    group = committer(runlog, max_in_flight=1)
    on_a = append(group, "a", "a1")
    await runlog.published(1)
    waiting_on_a = append(group, "a", "a2")
    on_b = append(group, "b", "b1")  # a's only slot is taken; b has its own
    [a_message, b_message] = await runlog.published(2)
    assert (b_message.board_id, b_message.run_ids) == ("b", ["b1"])
    await settle()
    assert len(runlog.publishes) == 2  # a2 waits for a's slot and is not added to b's message

    a_message.fail(Unavailable("down"))
    with pytest.raises(Unavailable):
        await on_a
    b_message.ack(5)
    assert await on_b == 5
    a_next = (await runlog.published(3))[2]
    assert (a_next.board_id, a_next.run_ids) == ("a", ["a2"])
    a_next.ack(6)
    assert await waiting_on_a == 6


def test_the_message_id_is_the_content_so_only_identical_messages_are_duplicates() -> None:
    """The runlog drops a message whose id it saw within its duplicate window and acks it as
    if stored: with an id naming only the run ids, a resend with another player or score was
    answered as durable and never logged. The id is a digest of the whole message."""
    alice = encode_message("b", [Run("run-1", "alice", 10, 1_000, 1_000)])
    bob = encode_message("b", [Run("run-1", "bob", 20, 1_000, 1_000)])
    assert message_id("b", alice) != message_id("b", bob)
    assert message_id("b", alice) == message_id("b", bytes(alice))
    assert message_id("b", alice) != message_id("c", alice)
