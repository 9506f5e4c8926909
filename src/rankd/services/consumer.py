"""The log consumer: a durable JetStream pull consumer shared by every service instance.

Each instance pulls batches from the same durable consumer, applies them (Redis, then the
PostgreSQL copy, see applier.py) and acks only after PostgreSQL commits. A failure leaves
the batch unacked; JetStream redelivers it after a backoff, a bounded number of times. A
message that can never apply is parked by the applier and acked. The consumer also keeps
the lag gauges (pending, oldest unacked) that /metrics and /readyz report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from rankd import metrics
from rankd.runs import decode_message
from rankd.services.applier import Applier, log_messages

log = logging.getLogger("rankd.consumer")

DURABLE = "rankd-applier"
# Redelivery after a failed or abandoned batch: fast first (a crashed instance), then slower.
BACKOFF_S = [2.0, 5.0, 10.0, 30.0, 60.0]
MAX_DELIVER = 100
BATCH = 100  # small batches keep each turn of the event loop short for requests


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


def consumer_config(subject_prefix: str) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=DURABLE,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        backoff=BACKOFF_S,
        max_deliver=MAX_DELIVER,
        max_ack_pending=20_000,
        filter_subject=f"{subject_prefix}.>",
    )


async def applied_through(js: JetStreamContext, stream: str) -> int | None:
    """When (receipt time, ms) the oldest logged run not yet applied by the shared consumer
    was received; None when every logged run has been applied.

    Every run received before that time is in Redis and PostgreSQL. The season job freezes
    a period only once this is past the period's grace, so no accepted run misses its
    archive. Reads the ack floor, which is conservative: runs acked out of order count as
    waiting until everything before them is acked.
    """
    try:
        info = await js.consumer_info(stream, DURABLE)
    except NotFoundError:
        return None  # no instance has ever consumed: nothing was logged for one to apply
    if not info.num_pending and not info.num_ack_pending:
        return None
    floor = int(info.ack_floor.stream_seq if info.ack_floor else 0)
    oldest = await js.get_msg(stream, floor + 1)
    _, runs = decode_message(oldest.data or b"")
    return min((r.received_at_ms for r in runs), default=0)


class LogConsumer:
    def __init__(self, js: JetStreamContext, stream: str, subject_prefix: str, applier: Applier):
        self.js = js
        self.stream = stream
        self.subject_prefix = subject_prefix
        self.applier = applier
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

    async def _subscribe(self) -> JetStreamContext.PullSubscription:
        return await self.js.pull_subscribe(
            f"{self.subject_prefix}.>",
            durable=DURABLE,
            stream=self.stream,
            config=consumer_config(self.subject_prefix),
        )

    async def _run(self) -> None:
        retry_s = 0.5
        sub = None
        while not self._stopping.is_set():
            try:
                if sub is None:
                    sub = await self._subscribe()
                try:
                    msgs = await sub.fetch(BATCH, timeout=1.0)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                batch = log_messages(msgs)
                await self.applier.apply(batch)
                for m in msgs:
                    await m.ack()
                retry_s = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "log consumer: %s: %s; retrying in %.1fs", type(exc).__name__, exc, retry_s
                )
                if isinstance(exc, NotFoundError):
                    sub = None
                await asyncio.sleep(retry_s)
                retry_s = min(retry_s * 2, 10.0)

    async def refresh_lag(self) -> Lag:
        info = await self.js.consumer_info(self.stream, DURABLE)
        lag = Lag(
            pending=int(info.num_pending or 0),
            ack_pending=int(info.num_ack_pending or 0),
            ack_floor=int(info.ack_floor.stream_seq if info.ack_floor else 0),
        )
        if lag.pending or lag.ack_pending:
            with contextlib.suppress(Exception):
                oldest = await self.js.get_msg(self.stream, lag.ack_floor + 1)
                if oldest.data:
                    _, runs = decode_message(oldest.data)
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
            await asyncio.sleep(2.0)
