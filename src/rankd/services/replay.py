"""Re-apply the log to Redis and PostgreSQL from a sequence number (``rankd replay``).

Every application is idempotent (a max, or a sum keyed by run id), so replaying any part of
the log, any number of times, leaves the boards as they were.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from rankd.services.applier import Applier, log_messages

BATCH = 1000


@dataclass
class ReplayReport:
    messages: int = 0
    parked: int = 0
    last_sequence: int = 0
    seconds: float = 0.0


async def last_sequence(js: JetStreamContext, stream: str) -> int:
    info = await js.stream_info(stream)
    return int(info.state.last_seq)


async def replay(
    js: JetStreamContext,
    stream: str,
    subject_prefix: str,
    applier: Applier,
    from_sequence: int = 1,
    progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    started = time.perf_counter()
    report = ReplayReport(last_sequence=await last_sequence(js, stream))
    if from_sequence > report.last_sequence:
        return report
    sub = await js.pull_subscribe(
        f"{subject_prefix}.>",
        stream=stream,
        config=ConsumerConfig(
            name=f"rankd-replay-{uuid.uuid4().hex[:12]}",
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=max(1, from_sequence),
            ack_policy=AckPolicy.EXPLICIT,
            inactive_threshold=60.0,
        ),
    )
    try:
        seen = from_sequence - 1
        while seen < report.last_sequence:
            try:
                msgs = await sub.fetch(BATCH, timeout=2.0)
            except (TimeoutError, nats.errors.TimeoutError):
                break  # nothing more within reach (messages past the end were removed)
            batch = log_messages(msgs)
            outcome = await applier.apply(batch)
            for m in msgs:
                await m.ack()
            seen = max(seen, *(m.seq for m in batch))
            report.messages += len(batch)
            report.parked += len(outcome.parked)
            if progress is not None:
                progress(len(batch))
    finally:
        await sub.unsubscribe()
    report.seconds = time.perf_counter() - started
    return report
