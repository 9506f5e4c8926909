"""Bounded shutdown helpers: a task that swallows its cancel cannot hold up a close."""

from __future__ import annotations

import asyncio
import time

import pytest

from rankd.aio import Stalled, stop_tasks, unless_stalled, wait_or_stop


async def test_stop_tasks_returns_the_names_of_tasks_that_ignore_their_cancel() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue  # as a driver that swallows a cancel mid-command would

    async def polite() -> None:
        await asyncio.sleep(10)

    tasks = [
        asyncio.create_task(stubborn(), name="stubborn"),
        asyncio.create_task(polite(), name="polite"),
    ]
    await asyncio.sleep(0)
    started = time.monotonic()
    stuck = await stop_tasks(tasks, timeout_s=0.2)
    assert stuck == ["stubborn"]
    assert time.monotonic() - started < 5
    assert tasks[1].cancelled()
    release.set()
    tasks[0].cancel()
    await asyncio.gather(tasks[0], return_exceptions=True)


async def test_wait_or_stop_wakes_on_stop_and_times_out_otherwise() -> None:
    stop = asyncio.Event()
    assert await wait_or_stop(stop, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, stop.set)
    assert await wait_or_stop(stop, 30) is True


async def test_a_slow_store_that_answers_others_is_waited_for_a_stalled_one_is_not() -> None:
    """aio.unless_stalled: waits past stall_s while others get answers, cuts a silent one."""

    # Others' answers are simulated as "just now" whenever asked, not by a timed feed: a
    # loaded machine can hold a feeding task past stall_s, which is not what is tested here.
    async def slow() -> str:
        await asyncio.sleep(0.4)
        return "done"

    started = time.monotonic()
    assert await unless_stalled(slow(), 0.2, time.monotonic) == "done"
    assert time.monotonic() - started >= 0.39  # waited past stall_s, not cut
    started = time.monotonic()
    cancelled = []

    async def silent() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(Stalled):
        await unless_stalled(silent(), 0.2, lambda: 0.0)  # nobody answered since long ago
    assert time.monotonic() - started >= 0.19 and cancelled == [True]
