"""InFlight: which items share a send, and who learns which outcome.

Pure coordination logic, so the send is a stand-in whose calls complete only when the test
says so; group commit (tests/test_group_commit.py) and the Redis batcher
(tests/integration/stores/test_redis_batch.py) test it again with their own sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from rankd.inflight import InFlight


class StandInSend:
    """Records every send; each waits until the test finishes it."""

    def __init__(self) -> None:
        self.sends: list[list[str]] = []
        self.outcomes: list[asyncio.Future[Sequence[str | BaseException]]] = []

    async def __call__(self, items: list[str]) -> Sequence[str | BaseException]:
        self.sends.append(items)
        outcome: asyncio.Future[Sequence[str | BaseException]] = (
            asyncio.get_running_loop().create_future()
        )
        self.outcomes.append(outcome)
        return await outcome

    def answer(self, i: int) -> None:
        """The send answers each item with its upper-cased self."""
        self.outcomes[i].set_result([item.upper() for item in self.sends[i]])


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def submit(dispatcher: InFlight[str, str], *items: str) -> list[asyncio.Task[str]]:
    return [asyncio.create_task(dispatcher.submit(item)) for item in items]


async def test_items_leave_at_once_until_max_in_flight_then_together() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=2, max_size=100)
    first = submit(dispatcher, "a", "b")
    await settle()
    assert send.sends == [["a"], ["b"]]  # each alone: nothing was in flight
    later = submit(dispatcher, "c", "d", "e")
    await settle()
    assert len(send.sends) == 2 and dispatcher.waiting == 3
    send.answer(0)
    await settle()
    assert send.sends[2] == ["c", "d", "e"]  # the waiting ones leave together
    send.answer(1)
    send.answer(2)
    assert await asyncio.gather(*first, *later) == ["A", "B", "C", "D", "E"]
    assert dispatcher.in_flight == 0


async def test_a_send_carries_at_most_max_size() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=1, max_size=4, size=len)
    tasks = submit(dispatcher, "x", "aa", "bb", "c", "dddddd")
    await settle()
    send.answer(0)
    await settle()
    assert send.sends[1] == ["aa", "bb"]  # 2 + 2; "c" would pass 4
    send.answer(1)
    await settle()
    assert send.sends[2] == ["c"]
    send.answer(2)
    await settle()
    assert send.sends[3] == ["dddddd"]  # larger than max_size: leaves alone
    send.answer(3)
    assert await asyncio.gather(*tasks) == ["X", "AA", "BB", "C", "DDDDDD"]


async def test_next_turn_gathers_one_turns_items() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=4, max_size=100, next_turn=True)
    tasks = submit(dispatcher, "a", "b", "c")
    await settle()
    assert send.sends == [["a", "b", "c"]]
    send.answer(0)
    assert await asyncio.gather(*tasks) == ["A", "B", "C"]


async def test_a_failed_send_fails_each_of_its_items_and_frees_its_slot() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=1, max_size=100)
    first = submit(dispatcher, "a")
    await settle()
    second = submit(dispatcher, "b", "c")
    await settle()
    send.outcomes[0].set_exception(ConnectionError("down"))
    with pytest.raises(ConnectionError):
        await first[0]
    await settle()
    assert send.sends[1] == ["b", "c"]
    send.answer(1)
    assert await asyncio.gather(*second) == ["B", "C"]


async def test_an_outcome_that_is_an_exception_goes_to_its_item_alone() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=1, max_size=100, next_turn=True)
    tasks = submit(dispatcher, "a", "b")
    await settle()
    send.outcomes[0].set_result(["A", ValueError("b's own")])
    assert await tasks[0] == "A"
    with pytest.raises(ValueError, match="b's own"):
        await tasks[1]


async def test_a_cancelled_caller_leaves_the_others_their_outcomes() -> None:
    send = StandInSend()
    dispatcher: InFlight[str, str] = InFlight(send, max_in_flight=1, max_size=100, next_turn=True)
    tasks = submit(dispatcher, "a", "b")
    await settle()
    tasks[0].cancel()
    await settle()
    send.answer(0)
    assert await tasks[1] == "B"
    assert tasks[0].cancelled()
    assert dispatcher.in_flight == 0
