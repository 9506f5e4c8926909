"""Group commit: concurrent submits to one board share log messages.

The log fsyncs every message, so its cost is per message, not per run. Each board has at
most ``max_in_flight`` messages being published; runs that arrive meanwhile wait and leave
together in the next message. At low load every submit publishes at once (no added
latency); under load messages grow instead of queueing. Each caller returns when the message
holding its runs is acked. Run ids, not the log, make resends harmless, so coalescing never
needs the log's duplicate detection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from rankd.inflight import InFlight
from rankd.runs import Run, encode_message


def message_id(board_id: str, payload: bytes) -> str:
    """The log's duplicate detection id: a digest of the whole message, so only a
    byte-identical message (a publish retried) is ever dropped as a duplicate, never a
    send whose content differs (its ack would answer for content the log never took)."""
    return f"{board_id}/{hashlib.sha256(payload).hexdigest()[:32]}"


class Appends(Protocol):
    """What group commit needs of the run log (stores/runlog.py's RunLog has it)."""

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int: ...


class GroupCommitter:
    def __init__(self, runlog: Appends, *, max_in_flight: int = 4, max_runs: int = 2000) -> None:
        self.runlog = runlog
        self.max_in_flight = max_in_flight
        self.max_runs = max_runs
        # one dispatcher per board incarnation: a message carries one board generation
        self._boards: dict[tuple[str, int], InFlight[Sequence[Run], int]] = {}

    async def append(self, board_id: str, runs: Sequence[Run], generation: int = 0) -> int:
        """Return once ``runs`` are durable in the log (the message's sequence number)."""
        board = (board_id, generation)
        dispatcher = self._boards.get(board)
        if dispatcher is None:

            async def publish(taken: list[Sequence[Run]]) -> list[int]:
                return [await self._publish(board, taken)] * len(taken)

            dispatcher = self._boards[board] = InFlight(
                publish, max_in_flight=self.max_in_flight, max_size=self.max_runs, size=len
            )
        return await dispatcher.submit(runs)

    async def _publish(self, board: tuple[str, int], taken: list[Sequence[Run]]) -> int:
        board_id, generation = board
        runs = [run for item in taken for run in item]
        payload = encode_message(board_id, runs, generation)
        return await self.runlog.publish(board_id, payload, message_id(board_id, payload))
