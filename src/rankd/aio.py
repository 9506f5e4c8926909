"""Small asyncio helpers shared by the stores and services."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def read_ahead(source: AsyncIterator[T], depth: int) -> AsyncIterator[T]:
    """``source``'s items, read up to ``depth`` ahead by a task, so the source (PostgreSQL,
    Redis) works while the consumer of the items does. The source's failure is raised at
    the end, so a consumer never mistakes a failed read for a complete one."""
    queue: asyncio.Queue[tuple[T] | None] = asyncio.Queue(maxsize=depth)

    async def produce() -> None:
        try:
            async for item in source:
                await queue.put((item,))
        finally:
            await queue.put(None)

    producer = asyncio.create_task(produce())
    try:
        while (held := await queue.get()) is not None:
            yield held[0]
    finally:
        if not producer.done():
            producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)
    producer.result()


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless ``stop`` is set first; True when stopping. Background loops
    check this instead of relying on cancellation alone, since a driver may swallow a
    cancel that lands mid-command."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


def keep_task(
    tasks: set[asyncio.Task[Any]], work: Coroutine[Any, Any, Any], name: str | None = None
) -> asyncio.Task[Any]:
    """Run ``work`` as a task held in ``tasks`` until it ends: the loop keeps only weak
    references to tasks, and the owner cancels what is left when it closes."""
    task = asyncio.create_task(work, name=name)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def stop_tasks(tasks: list[asyncio.Task[None]], timeout_s: float) -> list[str]:
    """Cancel ``tasks`` and wait at most ``timeout_s`` for them; the names of those still
    running (so shutdown is bounded even when a task ignores its cancel)."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return []
    _done, pending = await asyncio.wait(tasks, timeout=timeout_s)
    return sorted(task.get_name() for task in pending)


class Stalled(Exception):
    """A store answered nothing at all for the whole allowed time (paused, not just busy)."""


async def unless_stalled(
    work: Coroutine[Any, Any, T], stall_s: float, answered_at: Callable[[], float]
) -> T:
    """``work``'s result, unless the store it waits on answers nothing (``answered_at``:
    when it last answered anyone in this process, monotonic) for ``stall_s`` counted from
    the later of that and this call: then ``work`` is cancelled and Stalled raised. A store
    that is only slow (a long queue under load) keeps answering others, so its waiters are
    not cut however long they wait; each waits at least ``stall_s`` of its own. Awaited in
    place (a timer, no task: it sits on the submit path)."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    stalled = False
    try:
        async with asyncio.timeout(None) as deadline:

            def look() -> None:
                nonlocal stalled
                quiet = time.monotonic() - max(answered_at(), started)
                if quiet >= stall_s:
                    stalled = True
                    deadline.reschedule(loop.time())
                else:
                    timer[0] = loop.call_later(stall_s - quiet, look)

            timer = [loop.call_later(stall_s, look)]
            try:
                return await work
            finally:
                timer[0].cancel()
    except TimeoutError:
        if stalled:
            raise Stalled(f"no answer for {stall_s:g}s") from None
        raise
