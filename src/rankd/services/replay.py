"""Re-apply the log to Redis and PostgreSQL from a sequence number (``rankd replay``).

Every application is idempotent (a max, or a sum keyed by run id), so replaying any part of
the log, any number of times, leaves the boards as they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rankd.services.applier import Applier, Outcome
from rankd.services.log_loop import apply_log
from rankd.stores.runlog import LogMessage, RunLog


@dataclass
class ReplayReport:
    messages: int = 0
    parked: int = 0
    last_sequence: int = 0
    seconds: float = 0.0


async def replay(
    log: RunLog,
    applier: Applier,
    from_sequence: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    batch: int = 1000,
) -> ReplayReport:
    started = time.perf_counter()
    report = ReplayReport(last_sequence=await log.last_sequence())
    if from_sequence > report.last_sequence:
        return report

    def count(messages: list[LogMessage], outcome: Outcome) -> None:
        report.messages += len(messages)
        report.parked += len(outcome.parked)
        if progress is not None:
            progress(len(messages))

    sub = await log.read_from(from_sequence)
    try:
        await apply_log(
            sub,
            applier,
            batch=batch,
            fetch_timeout_s=2.0,
            until=report.last_sequence,
            on_batch=count,
        )
    finally:
        await sub.close()
    report.seconds = time.perf_counter() - started
    return report
