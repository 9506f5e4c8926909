"""Group commit: concurrent submits to one board share log messages.

The log fsyncs every message, so its cost is per message, not per run. Each board has at
most ``max_in_flight`` messages being published; runs that arrive meanwhile wait and leave
together in the next message. At low load every submit publishes at once (no added
latency); under load messages grow instead of queueing. Each caller returns when the message
holding its runs is acked. Run ids, not the log, make resends harmless, so coalescing never
needs the log's duplicate detection.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from rankd.runs import Run, encode_message
from rankd.stores.runlog import RunLog


@dataclass
class _Waiting:
    runs: Sequence[Run]
    done: asyncio.Future[int]


@dataclass
class _BoardQueue:
    waiting: deque[_Waiting] = field(default_factory=deque)
    in_flight: int = 0


def message_id(board_id: str, payload: bytes) -> str:
    """The log's duplicate detection id: a digest of the whole message, so only a
    byte-identical message (a publish retried) is ever dropped as a duplicate, never a
    send whose content differs (its ack would answer for content the log never took)."""
    return f"{board_id}/{hashlib.sha256(payload).hexdigest()[:32]}"


class GroupCommitter:
    def __init__(self, log: RunLog, *, max_in_flight: int = 4, max_runs: int = 2000) -> None:
        self.log = log
        self.max_in_flight = max_in_flight
        self.max_runs = max_runs
        # one queue per board incarnation: a message carries one board generation
        self._boards: dict[tuple[str, int], _BoardQueue] = defaultdict(_BoardQueue)
        self._tasks: set[asyncio.Task[None]] = set()

    async def append(self, board_id: str, runs: Sequence[Run], generation: int = 0) -> int:
        """Return once ``runs`` are durable in the log (the message's sequence number)."""
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        board = (board_id, generation)
        self._boards[board].waiting.append(_Waiting(runs, done))
        self._dispatch(board)
        return await done

    def _dispatch(self, board: tuple[str, int]) -> None:
        queue = self._boards[board]
        while queue.waiting and queue.in_flight < self.max_in_flight:
            taken = [queue.waiting.popleft()]
            count = len(taken[0].runs)
            while queue.waiting and count + len(queue.waiting[0].runs) <= self.max_runs:
                count += len(queue.waiting[0].runs)
                taken.append(queue.waiting.popleft())
            queue.in_flight += 1
            task = asyncio.create_task(self._publish(board, taken))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _publish(self, board: tuple[str, int], taken: list[_Waiting]) -> None:
        board_id, generation = board
        runs = [run for item in taken for run in item.runs]
        try:
            payload = encode_message(board_id, runs, generation)
            seq = await self.log.publish(board_id, payload, message_id(board_id, payload))
        except BaseException as exc:  # every waiter learns the outcome, whatever it was
            for item in taken:
                if not item.done.done():
                    item.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            for item in taken:
                if not item.done.done():
                    item.done.set_result(seq)
        finally:
            self._boards[board].in_flight -= 1
            self._dispatch(board)
