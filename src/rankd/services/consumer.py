"""The log consumer: a durable pull consumer of the run log shared by every service instance.

Each instance pulls batches from the same durable consumer, applies them (Redis, then the
PostgreSQL copy, see applier.py) and acks only after PostgreSQL commits. A failure leaves
the batch unacked; the log redelivers it after a backoff, a bounded number of times. A
message that can never apply is parked by the applier and acked. The consumer also keeps
the lag gauges (pending, oldest unacked) that /metrics and /readyz report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from rankd import metrics
from rankd.runs import decode_message
from rankd.services.applier import Applier, Outcome
from rankd.services.log_loop import apply_log
from rankd.stores.runlog import Durable, LogMessage, LogSubscription, RunLog

log = logging.getLogger("rankd.consumer")

DURABLE = "rankd-applier"


@dataclass
class Lag:
    pending: int = 0
    ack_pending: int = 0
    oldest_unacked_s: float = 0.0
    ack_floor: int = 0

    def as_dict(self) -> dict[str, float]:
        return {
            "pending": self.pending,
            "ack_pending": self.ack_pending,
            "oldest_unacked_seconds": round(self.oldest_unacked_s, 3),
        }


class LogConsumer:
    def __init__(
        self,
        log: RunLog,
        applier: Applier,
        durable: Durable,
        *,
        batch: int = 100,
        lag_refresh_s: float = 2.0,
    ) -> None:
        self.log = log
        self.applier = applier
        self.durable = durable
        self.batch = batch
        self.lag_refresh_s = lag_refresh_s
        self.lag = Lag()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._run(), name="log-consumer"),
            asyncio.create_task(self._watch_lag(), name="log-consumer-lag"),
        ]

    async def stop(self) -> None:
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self) -> None:
        retry_s = 0.5

        def applied(_messages: list[LogMessage], _outcome: Outcome) -> None:
            nonlocal retry_s
            retry_s = 0.5

        sub: LogSubscription | None = None
        try:
            while not self._stopping.is_set():
                try:
                    if sub is None:
                        sub = await self.log.subscribe(self.durable)
                    await apply_log(
                        sub, self.applier, batch=self.batch, fetch_timeout_s=1.0, on_batch=applied
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning(
                        "log consumer: %s: %s; retrying in %.1fs", type(exc).__name__, exc, retry_s
                    )
                    await asyncio.sleep(retry_s)
                    retry_s = min(retry_s * 2, 10.0)
        finally:
            if sub is not None:
                with contextlib.suppress(Exception):
                    await sub.close()

    async def refresh_lag(self) -> Lag:
        state = await self.log.lag(self.durable.name)
        lag = Lag(pending=state.pending, ack_pending=state.ack_pending, ack_floor=state.ack_floor)
        if state.oldest_unacked is not None:
            with contextlib.suppress(ValueError):
                _, runs = decode_message(state.oldest_unacked)
                if runs:
                    lag.oldest_unacked_s = max(0.0, time.time() - runs[0].received_at_ms / 1000)
        self.lag = lag
        metrics.CONSUMER_PENDING.set(lag.pending)
        metrics.CONSUMER_ACK_PENDING.set(lag.ack_pending)
        metrics.CONSUMER_OLDEST_UNACKED.set(lag.oldest_unacked_s)
        return lag

    async def _watch_lag(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(Exception):
                await self.refresh_lag()
            await asyncio.sleep(self.lag_refresh_s)
