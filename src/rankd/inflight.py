"""At most N sends in flight; whatever arrives meanwhile leaves together in the next one.

Group commit (services/group_commit.py: runs into one log message) and the Redis batcher
(stores/redis/batch.py: requests' calls into one pipeline) are this one dispatcher. Under
light load every item leaves at once, alone (no added latency); under load the sends grow
instead of queueing. A send carries at most ``max_size`` (by ``size``, one item at least);
each caller gets back its own outcome: its result, or the error the send raised or answered
for it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rankd.aio import keep_task

Item = TypeVar("Item")
Result = TypeVar("Result")

# one outcome per item sent, in order: its result, or an exception for that caller alone
Send = Callable[[list[Item]], Awaitable[Sequence[Result | BaseException]]]


@dataclass(slots=True)
class _Waiting(Generic[Item, Result]):
    item: Item
    size: int
    done: asyncio.Future[Result]


class InFlight(Generic[Item, Result]):
    """``await dispatcher.submit(item)``: the item's outcome once a send carried it.

    ``next_turn``: an item waits for the next turn of the event loop before leaving, so the
    items submitted in one turn leave together even when nothing is in flight (the Redis
    batcher); else it leaves at once when a send is free (group commit)."""

    def __init__(
        self,
        send: Send[Item, Result],
        *,
        max_in_flight: int,
        max_size: int,
        size: Callable[[Item], int] = lambda _: 1,
        next_turn: bool = False,
    ) -> None:
        self.send = send
        self.max_in_flight = max_in_flight
        self.max_size = max_size
        self.size = size
        self.next_turn = next_turn
        self.in_flight = 0
        self._waiting: deque[_Waiting[Item, Result]] = deque()
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def waiting(self) -> int:
        """Items waiting for a send."""
        return len(self._waiting)

    async def submit(self, item: Item) -> Result:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Result] = loop.create_future()
        self._waiting.append(_Waiting(item, self.size(item), done))
        if not self.next_turn:
            self._dispatch()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._dispatch)
        return await done

    def _dispatch(self) -> None:
        self._scheduled = False
        while self._waiting and self.in_flight < self.max_in_flight:
            taken = [self._waiting.popleft()]
            size = taken[0].size
            while self._waiting and size + self._waiting[0].size <= self.max_size:
                size += self._waiting[0].size
                taken.append(self._waiting.popleft())
            self.in_flight += 1
            keep_task(self._tasks, self._send(taken))

    async def _send(self, taken: list[_Waiting[Item, Result]]) -> None:
        try:
            outcomes = await self.send([w.item for w in taken])
        except BaseException as exc:  # every waiter learns the outcome, whatever it was
            for w in taken:
                if not w.done.done():
                    w.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            for w, outcome in zip(taken, outcomes, strict=True):
                if w.done.done():  # its caller was cancelled
                    continue
                if isinstance(outcome, BaseException):
                    w.done.set_exception(outcome)
                else:
                    w.done.set_result(outcome)
        finally:
            self.in_flight -= 1
            if self._waiting and not self._scheduled:
                self._dispatch()
