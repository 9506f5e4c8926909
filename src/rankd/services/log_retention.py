"""Keeping the run log bounded (RANKD_LOG_RETENTION) without ever losing a run.

JetStream's own limits (max_age, max_bytes) drop the oldest messages whether or not anyone
applied them, so the stream is created without them. Instead each instance, every
``log_retention_check_s``, trims the log itself, only ever below the durable consumer's ack
floor (every message up to it is in PostgreSQL): the cut is where the age limit and the size
limit would cut, whichever keeps less, but never past the floor. A consumer that has fallen
behind therefore holds the log back (and rankd_consumer_oldest_unacked_seconds alerts on
it): the disk fills before a run is lost.

What this bounds: a replay (`rankd replay`) reaches back as far as the log keeps; a Redis
restart whose recorded position the log no longer holds is restored from PostgreSQL first
(services/rebuild/restart.py), then from the log's tail. Several instances trimming at once is
harmless: a purge below a sequence is idempotent.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from rankd import metrics
from rankd.aio import wait_or_stop
from rankd.errors import Unavailable
from rankd.retention import Retention
from rankd.stores.runlog import RunLog

logger = logging.getLogger("rankd.log")


@dataclass(frozen=True, slots=True)
class Trim:
    """One pass: the first sequence kept before and after, and where the limits alone would
    have cut (held back by the consumer when ``wanted`` > ``kept_from``)."""

    first_before: int
    kept_from: int
    wanted: int

    @property
    def purged(self) -> int:
        return max(0, self.kept_from - self.first_before)


class LogRetention:
    def __init__(
        self,
        runlog: RunLog,
        durable: str,
        retention: Retention,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.runlog = runlog
        self.durable = durable
        self.retention = retention
        self.clock_ms = clock_ms

    async def trim(self) -> Trim:
        state = await self.runlog.state()
        first = state.first
        wanted = first
        if self.retention.max_age_s is not None and state.messages:
            wanted = max(wanted, await self._first_newer_than(first, state.last, self._cutoff()))
        if self.retention.max_bytes is not None and state.bytes > self.retention.max_bytes:
            per_message = state.bytes / max(1, state.messages)
            over = math.ceil((state.bytes - self.retention.max_bytes) / per_message)
            wanted = max(wanted, min(state.last + 1, first + over))
        # never what the durable copy has not applied: only up to the consumer's ack floor
        floor = (await self.runlog.lag(self.durable)).ack_floor
        cut = min(wanted, floor + 1)
        if cut > first:
            await self.runlog.purge_before(cut)
            metrics.LOG_PURGED.inc(cut - first)
            logger.info("run log trimmed: messages %d..%d dropped (retention)", first, cut - 1)
        return Trim(first, max(first, cut), wanted)

    def _cutoff(self) -> int:
        assert self.retention.max_age_s is not None
        return self.clock_ms() - self.retention.max_age_s * 1000

    async def _first_newer_than(self, low: int, last: int, cutoff_ms: int) -> int:
        """The first sequence stored at or after ``cutoff_ms`` (last + 1: none): a binary
        search over the stored times, which only grow with the sequence."""
        high = last + 1
        while low < high:
            middle = (low + high) // 2
            found = await self.runlog.received_at(middle)
            if found is None:  # nothing at or after it (erased to the end)
                high = middle
                continue
            seq, at_ms = found
            if at_ms >= cutoff_ms:
                high = middle
            else:
                low = seq + 1
        return low

    async def run_forever(self, interval_s: float, stop: asyncio.Event) -> None:
        while not await wait_or_stop(stop, interval_s):
            try:
                await self.trim()
            except Unavailable as exc:  # the log or the consumer's state: next round
                logger.info("run log retention: %s; again in %.0f s", exc, interval_s)
