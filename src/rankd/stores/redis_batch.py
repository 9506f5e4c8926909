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

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

from rankd.stores.redis_scripts import Call, load_all

Command = tuple[str, tuple[Any, ...]]


@dataclass(slots=True)
class _Waiting:
    calls: Sequence[Call]
    extra: Sequence[Command]
    done: asyncio.Future[list[Any]]

    @property
    def size(self) -> int:
        return len(self.calls) + len(self.extra)


class Batcher:
    def __init__(self, redis: Redis, *, max_in_flight: int = 4, max_calls: int = 5000) -> None:
        self.redis = redis
        self.max_in_flight = max_in_flight
        self.max_calls = max_calls
        self._waiting: deque[_Waiting] = deque()
        self._in_flight = 0
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """The results of ``calls`` then ``extra``, as one pipeline of their own would give
        them; the first error among them is raised."""
        done: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(calls, extra, done))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._dispatch)
        return await done

    async def call(self, call: Call) -> Any:
        [result] = await self.run([call])
        return result

    def _dispatch(self) -> None:
        self._scheduled = False
        while self._waiting and self._in_flight < self.max_in_flight:
            taken = [self._waiting.popleft()]
            size = taken[0].size
            while self._waiting and size + self._waiting[0].size <= self.max_calls:
                size += self._waiting[0].size
                taken.append(self._waiting.popleft())
            self._in_flight += 1
            task = asyncio.create_task(self._send(taken))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, taken: list[_Waiting]) -> None:
        try:
            results = await self._pipeline(taken)
        except BaseException as exc:  # every waiter learns the outcome, whatever it was
            for item in taken:
                if not item.done.done():
                    item.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            at = 0
            for item in taken:
                mine = results[at : at + item.size]
                at += item.size
                if item.done.done():
                    continue
                error = next((r for r in mine if isinstance(r, Exception)), None)
                if error is not None:
                    item.done.set_exception(error)
                else:
                    item.done.set_result(mine)
        finally:
            self._in_flight -= 1
            if self._waiting and not self._scheduled:
                self._dispatch()

    async def _pipeline(self, taken: list[_Waiting]) -> list[Any]:
        """Every waiter's calls and commands, in one pipeline; errors left in place. After
        NOSCRIPT (Redis lost its scripts) the scripts are loaded and the pipeline resent,
        which the scripts' idempotence makes safe."""
        for attempt in range(2):
            pipe = self.redis.pipeline(transaction=False)
            for item in taken:
                for script, keys, args in item.calls:
                    pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
                for command, command_args in item.extra:
                    pipe.execute_command(command, *command_args)
            results: list[Any] = await pipe.execute(raise_on_error=False)
            if attempt == 0 and any(isinstance(r, NoScriptError) for r in results):
                await load_all(self.redis)
                continue
            return results
        raise AssertionError("unreachable")
