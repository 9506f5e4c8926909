"""Concurrent requests' Redis calls, sent together: one pipeline for many requests.

Under load most of a request's Redis cost is the client's, per round trip: taking a
connection from the pool, a socket write, waking up for the reply. Group commit already
lets concurrent submits share one log message; this does the same for their script calls
and for concurrent reads. A caller hands its calls to the batcher and awaits its results;
at most ``max_in_flight`` pipelines are on the wire at once, and calls that arrive meanwhile
leave together in the next one. At low load a call leaves on the next turn of the event
loop, so nothing waits that would not have.

Each caller gets its own results (or its own first error) back, exactly as from a pipeline
of its own: the calls are independent scripts and commands, and a non-transactional
pipeline runs them in order, each on its own. Bounded: a pipeline carries at most
``max_calls`` calls; the waiting calls are bounded by the requests in flight (each waits for
its own), which the HTTP server's connection cap bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from rankd.inflight import InFlight
from rankd.stores.redis.scripts import Call, Command, send_requests


@dataclass(slots=True)
class _Waiting:
    calls: Sequence[Call]
    extra: Sequence[Command]

    @property
    def size(self) -> int:
        return len(self.calls) + len(self.extra)


class Batcher:
    def __init__(self, redis: Redis, *, max_in_flight: int = 4, max_calls: int = 5000) -> None:
        self.redis = redis
        self.max_in_flight = max_in_flight
        self.max_calls = max_calls
        # at most max_in_flight pipelines; the calls of one turn of the event loop, and
        # those that arrive while every pipeline is out, leave together (rankd/inflight.py)
        self._dispatcher: InFlight[_Waiting, list[Any]] = InFlight(
            self._pipeline,
            max_in_flight=max_in_flight,
            max_size=max_calls,
            size=lambda item: item.size,
            next_turn=True,
        )

    async def run(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """The results of ``calls`` then ``extra``, as one pipeline of their own would give
        them; the first error among them is raised."""
        return await self._dispatcher.submit(_Waiting(calls, extra))

    async def call(self, call: Call) -> Any:
        [result] = await self.run([call])
        return result

    async def _pipeline(self, taken: list[_Waiting]) -> list[list[Any] | BaseException]:
        """Every waiter's calls and commands, in one pipeline; errors left in place. After
        NOSCRIPT (Redis lost its scripts) the scripts are loaded and the pipeline resent,
        which the scripts' idempotence makes safe (scripts.py). Each waiter gets its own
        results, or the first error among them."""
        results = await send_requests(self.redis, [(item.calls, item.extra) for item in taken])
        out: list[list[Any] | BaseException] = []
        at = 0
        for item in taken:
            mine = results[at : at + item.size]
            at += item.size
            error = next((r for r in mine if isinstance(r, Exception)), None)
            out.append(mine if error is None else error)
        return out
